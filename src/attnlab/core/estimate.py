"""What one training cell of a config would cost, estimated before any compute.

A few terms, each tied to the keys that drive it, so that a runaway value is
refused naming its key instead of ending in a MemoryError or a run that never
ends. Memory is an estimate of the trainer's peak (its activation term is the
one the planning declares to schedulers, attnlab.pipeline.plan); time is a lower
bound (an optimistic device and host), so only a config that no machine could
finish is refused. `estimate(cfg)` shows the numbers.
"""

from __future__ import annotations

import os

from attnlab.core.errors import ConfigError

RUNTIME_BYTES = 1000 * 2**20  # Python, JAX and XLA themselves
ACTIVATION_FACTOR = 24  # a step's peak bytes per byte of one float32 attention tensor (fitted to measured peaks)
STATE_COPIES = 6  # parameters, gradients, two Adam moments, the last finite copy, the probe's
EVAL_ATTENTION_COPIES = 2  # a forward-only evaluation's live scores and weights per head (one layer at a time)
BYTES_PER_EVALUATION = 560  # one evaluation's entries in the step plan and the loss curve (Python objects)
BYTES_PER_CHECKPOINT = 160  # one checkpoint's entry in the step plan
BYTES_PER_HELD_OUT_TOKEN = 16  # inputs and targets on the device, the windows they are sliced from
VOCAB_BOUND = 256  # parameters are estimated at a byte-sized vocabulary, above the corpus's 65 characters
HOST_SECONDS_PER_BATCH = 10e-6  # each batch's offsets are drawn on the host (about 40 us on a laptop core)
DEVICE_FLOPS = 1e15  # a fast accelerator; real runs are slower, so the time estimate is a lower bound
MAX_CELL_SECONDS = 7 * 86400
STEP_LIMIT = 2**31 - 1  # the trainer's step counter is a 32-bit integer on the device


def estimate(cfg: dict) -> dict:
    """One training cell's estimated peak memory (bytes) and least time (seconds), term by term.

    Each term is (what, key, value, fix, amount): the key that drives it, that key's value and how to
    lower the term. `memory` and `seconds` are the totals; `cfg` is a validated config.
    """
    model, train, telemetry = cfg["model"], cfg["train"], cfg["telemetry"]
    d, layers, heads, T, d_ff = (model[k] for k in ("d_model", "layers", "heads", "block_size", "d_ff"))
    B, steps, every = train["batch_size"], train["steps"], train["eval_every"]
    checkpoint_every = train.get("checkpoint_every") or every
    telemetry_batches = telemetry.get("batches") or train["eval_batches"]
    telemetry_key = "telemetry.batches" if telemetry.get("batches") else "train.eval_batches"
    telemetry_fix = ("lower telemetry.batches" if telemetry.get("batches") else
                     "lower train.eval_batches (telemetry.batches, when null, follows it)")
    params = layers * (4 * d * d + 2 * d * d_ff) + (2 * VOCAB_BOUND + T) * d
    step_flops = 6 * params * B * T + 12 * B * layers * T * T * d  # forward and backward
    batch_flops = step_flops / 3  # forward only
    evaluations = steps // every + 2
    chunk = min(steps, every, checkpoint_every)
    chunk_key = ("train.steps" if chunk == steps else "train.eval_every" if chunk == every
                 else "train.checkpoint_every")
    snapshots = len(set(telemetry["snapshot_fractions"])) + 1
    size = ("model.d_model", d, "lower model.d_model, model.d_ff or model.layers")
    window = ("model.block_size", T) if T >= B else ("train.batch_size", B)  # the activations grow as B * T^2
    memory = [
        ("the Python, JAX and XLA runtime", None, None, "", RUNTIME_BYTES),
        ("parameters and optimiser state", *size, STATE_COPIES * 4 * params),
        ("the activations of one step", *window, "lower model.block_size or train.batch_size",
         ACTIVATION_FACTOR * 4 * B * heads * T * T * layers),
        ("the step plan and loss curve", "train.steps", steps, "lower train.steps or raise train.eval_every",
         evaluations * BYTES_PER_EVALUATION + steps // checkpoint_every * BYTES_PER_CHECKPOINT),
        ("the batch offsets and losses of one run of steps between stops", chunk_key, train[chunk_key.split(".")[1]],
         f"lower {chunk_key}", chunk * (8 * B + 8) + every * 32),
        ("the validation batches", "train.eval_batches", train["eval_batches"], telemetry_fix if
         telemetry_key == "train.eval_batches" else "lower train.eval_batches",
         train["eval_batches"] * B * T * BYTES_PER_HELD_OUT_TOKEN),
        ("the telemetry batches with their per-head statistics", telemetry_key, telemetry_batches,
         telemetry_fix, telemetry_batches * B * T * (BYTES_PER_HELD_OUT_TOKEN + 4 * layers * heads)),
        ("the attention snapshots", "telemetry.snapshot_fractions", len(telemetry["snapshot_fractions"]),
         "store fewer snapshots or lower model.block_size", snapshots * layers * heads * T * T * 8),
    ]
    if train.get("eval_context_multiples"):  # the best checkpoint read in windows of m x block_size, B // m a batch
        m = max(train["eval_context_multiples"])
        keys = model.get("attention_block", 64) if model.get("attention_impl") == "blockwise" else m * T
        memory.append(("the evaluation at the longest window", "train.eval_context_multiples", m,
                       "lower the largest train.eval_context_multiples or model.block_size (or read it with "
                       "model.attention_impl: blockwise)",
                       EVAL_ATTENTION_COPIES * 4 * max(1, B // m) * heads * m * T * keys))
    seconds = [
        ("training", "train.steps", steps, "lower train.steps or the model size",
         steps * (HOST_SECONDS_PER_BATCH + step_flops / DEVICE_FLOPS)),
        ("evaluation", "train.eval_batches", train["eval_batches"],
         "lower train.eval_batches or raise train.eval_every",
         train["eval_batches"] * (HOST_SECONDS_PER_BATCH + evaluations * batch_flops / DEVICE_FLOPS)),
        ("the telemetry probe", telemetry_key, telemetry_batches, telemetry_fix,
         telemetry_batches * (HOST_SECONDS_PER_BATCH + 2 * batch_flops / DEVICE_FLOPS)),
    ]
    return {"memory": sum(t[-1] for t in memory), "seconds": sum(t[-1] for t in seconds),
            "memory_terms": memory, "time_terms": seconds}


# The memory terms an accelerator holds (the rest stay on the host): what one job needs of a GPU's memory.
DEVICE_TERMS = ("parameters and optimiser state", "the activations of one step", "the validation batches",
                "the telemetry batches with their per-head statistics", "the evaluation at the longest window")


def device_memory(cfg: dict) -> tuple[float, tuple]:
    """The estimated bytes one training cell holds on an accelerator, and its largest term (as estimate's)."""
    terms = [term for term in estimate(cfg)["memory_terms"] if term[0] in DEVICE_TERMS]
    return sum(term[-1] for term in terms), max(terms, key=lambda term: term[-1])


def machine_memory() -> int | None:
    """Physical memory of this machine in bytes (os.sysconf), or None where the system does not say."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    return total if total > 0 else None


def check_bounds(cfg: dict, source: str = "config") -> None:
    """Refuse a config whose cell could not fit in this machine's memory or finish in MAX_CELL_SECONDS."""
    problems = []
    est, have = estimate(cfg), machine_memory()
    summary = (f"estimated {bytes_text(est['memory'])} of memory and at least {_duration(est['seconds'])} per cell; "
               f"this machine has {bytes_text(have) + ' of' if have else 'an unknown amount of'} memory")
    if have is not None and est["memory"] > have:
        whats, key, value, fix, amount = _largest(est["memory_terms"])
        problems.append(f"{key}: {value:,} is too large: {whats} would take {bytes_text(amount)} ({summary}); {fix}")
    if est["seconds"] > MAX_CELL_SECONDS:
        whats, key, value, fix, amount = _largest(est["time_terms"])
        problems.append(f"{key}: {value:,} is too large: {whats} would take at least {_duration(amount)} even on a "
                        f"fast machine, past the limit of {_duration(MAX_CELL_SECONDS)} per cell ({summary}); {fix}")
    if cfg["train"]["steps"] > STEP_LIMIT:
        problems.append(f"train.steps: {cfg['train']['steps']:,} is more than the trainer's 32-bit step counter "
                        f"holds ({STEP_LIMIT:,}); lower it")
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))


def _largest(terms: list) -> tuple:
    """The key whose terms add up to the most, with what those terms are, its value, its fix and their sum."""
    by_key: dict = {}
    for what, key, value, fix, amount in terms:
        if key is not None:
            entry = by_key.setdefault(key, [[], key, value, fix, 0])
            entry[0].append(what)
            entry[4] += amount
    whats, key, value, fix, amount = max(by_key.values(), key=lambda entry: entry[4])
    return " and ".join(whats), key, value, fix, amount


def bytes_text(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"
