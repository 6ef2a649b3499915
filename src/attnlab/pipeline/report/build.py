"""What the build was: its protocol beside the published one, what the cells ran on, and the compute they used.

Read from runs.csv (each bundle's config and provenance) and, for the
published protocol, from the config file of that name beside the results
(config/paper.yaml): the writeup never types a protocol's size by hand.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from attnlab.core.config import load_config
from attnlab.pipeline.ground import contract, environment
from attnlab.pipeline.ground import build_manifest, paths
from attnlab.pipeline.claims import build_protocol, published
from attnlab.pipeline.tables import study as tables_study
from attnlab.pipeline.tables.display import human
from attnlab.pipeline.ground.paths import results_dir
from attnlab.pipeline.ground.formatting import finite, plural

PACKAGE_ORDER = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "pandas", "snakemake")


def load_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """Every table the collect step writes (the table contract), and the composability, seed_rounds and step_times
    tables when the build has them (attnlab.pipeline.ground.build_manifest)."""
    tables = {name: pd.read_csv(Path(folder) / f"{name}.csv") for name in contract.COLLECTED}
    for name in ("composability", "seed_rounds", "step_times"):  # a study; seeds added until decided; timing
        if build_manifest.has_table(folder, name):
            tables[name] = pd.read_csv(Path(folder) / f"{name}.csv")
    return tables


def load_studies(folder: Path) -> dict[str, pd.DataFrame]:
    """The config's own studies' tables (study_<name>.csv), by study name, in name order: this build's studies
    only (attnlab.pipeline.ground.build_manifest), not one an earlier config left in the folder."""
    prefix = paths.study_file("")
    return {path.stem.removeprefix(prefix): pd.read_csv(path)
            for path in sorted(Path(folder).glob(f"{prefix}*.csv")) if build_manifest.has_table(folder, path.stem)}


def study_display(table: pd.DataFrame) -> pd.DataFrame:
    """A study's table as study_<name>.md shows it (its axes are the columns between `study` and `variant`),
    without the study column the caption names."""
    axes = list(table.columns[1:list(table.columns).index("variant")])
    return tables_study.study_display(table, axes).drop(columns="study").map(human)


def protocol(runs: pd.DataFrame) -> str:
    """The config name every cell ran ('mixed: a, b' when several)."""
    return build_protocol({"runs": runs})


def published_protocol() -> str:
    return published()["protocol"]


def same_protocol(runs: pd.DataFrame) -> bool:
    """Published numbers are only comparable when this build ran the published protocol."""
    return protocol(runs) == published_protocol()


def describe(model: dict, train: dict, seeds) -> str:
    """A protocol's size in words: 'd_model 64, 2 layers, 4 heads, a 64-character window, 1,000 steps of batch 16'."""
    seeds = sorted(int(s) for s in seeds)
    text = (f"d_model {int(model['d_model'])}, {plural(int(model['layers']), 'layer')}, "
            f"{plural(int(model['heads']), 'head')}, a {int(model['block_size'])}-character window, "
            + (f"up to {int(train['steps']):,} steps (each cell to its plateau)" if _plateau(train)
               else f"{int(train['steps']):,} steps") + f" of batch {int(train['batch_size'])}")
    return text + (f", {plural(len(seeds), 'contest seed')}" if seeds else "")


def _plateau(train: dict) -> bool:
    patience = train.get("plateau.patience")
    return patience is not None and patience == patience  # NaN: a cell without the rule


def build_size(runs: pd.DataFrame, contest: pd.DataFrame) -> str:
    """This build's protocol in words, from the config each bundle recorded."""
    first = runs.iloc[0]
    model = {k: first[f"config.model.{k}"] for k in ("d_model", "layers", "heads", "block_size")}
    train = {k: first[f"config.train.{k}"] for k in ("steps", "batch_size", "plateau.patience")
             if f"config.train.{k}" in first}
    seeds = {s for text in contest.seeds.astype(str) for s in text.split()}
    return describe(model, train, seeds)


def published_size() -> str:
    """The published protocol in words, from config/<published protocol>.yaml in the workspace ('' without it)."""
    path = results_dir().parent / "config" / f"{published_protocol()}.yaml"
    if not path.is_file():
        return ""
    cfg = load_config(path)
    return describe(cfg["model"], cfg["train"], cfg["contest"]["seeds"])


def protocol_text(runs: pd.DataFrame, contest: pd.DataFrame) -> str:
    """Which protocol ran and how it stands to the published one (HTML: the protocol names as code)."""
    name, pub = protocol(runs), published_protocol()
    text = (f"It ran the <code>{name}</code> protocol: {build_size(runs, contest)}; "
            f"{plural(len(runs), 'trained cell')}, {compute_used(runs).split(' for ')[0]} of training.")
    if same_protocol(runs):
        return text + " That is the posts' published protocol, so the published numbers stand beside this build's."
    size = published_size()
    return text + (f" The posts published their numbers at the larger <code>{pub}</code> protocol"
                   + (f" ({size})" if size else "")
                   + f". Where the published numbers stand beside this build's, they are for reference: every "
                   f"verdict here is a verdict at <code>{name}</code>, and none speaks for <code>{pub}</code>.")


# ---- what the cells ran on


def _values(runs: pd.DataFrame, column: str) -> list[str]:
    if column not in runs:
        return []
    return sorted({str(v) for v in runs[column] if not (isinstance(v, float) and not finite(v))})


def provenance_table(runs: pd.DataFrame) -> pd.DataFrame:
    """What the cells ran on, one readable row per fact; a fact that differs between cells lists every value."""
    rows = []

    def add(what, values):
        if values:
            rows.append({"what": what, "value": ", ".join(values)})

    commits = _values(runs, "provenance.git.commit")
    dirty = {str(v) for v in runs.get("provenance.git.dirty", pd.Series(dtype=object)).dropna()}
    state = ("with uncommitted changes" if "True" in dirty else "a clean checkout") if dirty else "state not recorded"
    add("attnlab source (git commit)", [f"{c} ({state})" for c in commits] or ["not recorded"])
    add("Python", _values(runs, "provenance.python"))
    packages = sorted((c.removeprefix("provenance.packages.") for c in runs if c.startswith("provenance.packages.")),
                      key=lambda n: (PACKAGE_ORDER.index(n) if n in PACKAGE_ORDER else len(PACKAGE_ORDER), n))
    add("packages", [" · ".join(f"{n} {', '.join(_values(runs, f'provenance.packages.{n}'))}" for n in packages)])
    kinds = _values(runs, "provenance.device.kind")
    counts = _values(runs, "provenance.device.count")
    add("device", [f"{', '.join(counts) or '?'} × {kind}" for kind in kinds])
    add("CPUs a training job could use", cpu_counts(runs))
    add("XLA CPU thread pool of a training job", cpu_counts(runs, "provenance.device.cpu_pool"))
    add("operating system", _values(runs, "provenance.platform"))
    add("XLA flags", _values(runs, "provenance.xla_flags"))
    jobs = _values(runs, "provenance.slurm_job_id")
    add("scheduler", [f"SLURM, {plural(len(jobs), 'job')}"] if jobs else ["local (no SLURM job)"])
    add("compute", [compute_used(runs)])
    return pd.DataFrame(rows, columns=["what", "value"])


def cpu_counts(runs: pd.DataFrame, column: str = "provenance.device.host_cpus") -> list[str]:
    """The CPUs each cell's job could use (or another count: its XLA pool), smallest first, and "not recorded"
    for bundles written before provenance counted them (so a mixed build does not pass for a uniform one)."""
    if column not in runs:
        return []
    counts = pd.to_numeric(runs[column], errors="coerce")
    shown = [f"{v:g}" for v in sorted(set(counts.dropna()))]
    return shown + (["not recorded"] if shown and counts.isna().any() else [])


def compute_used(runs: pd.DataFrame) -> str:
    """The compute the cells' training used: their training loops (wall_time_s) and compilation (compile_s), summed.

    These are wall-clock minutes of the jobs, not CPU time: a training job declares one core to Snakemake
    (workflow/rules/train.smk), but XLA's CPU thread pool still spreads its work over every CPU the process may
    use, so on a CPU the jobs of a build share the machine's CPUs. On an accelerator the same sum is in
    device-minutes.
    """
    if runs.empty or "wall_time_s" not in runs:
        return "not recorded (runs.csv has no wall times)"
    loops = float(runs.wall_time_s.astype(float).sum()) / 60
    compiling = float(runs.compile_s.astype(float).sum()) / 60 if "compile_s" in runs else float("nan")
    kinds = _values(runs, "provenance.device.kind")
    unit = ("CPU job-minutes" if kinds == ["cpu"] else "GPU-minutes" if kinds == ["gpu"]
            else f"device-minutes ({', '.join(kinds) or 'device not recorded'})")
    total = loops + (compiling if finite(compiling) else 0)
    text = f"{total:,.1f} {unit} for {len(runs)} cells: training loops {loops:,.1f}"
    if finite(compiling):
        text += f", compiling {compiling:,.1f}"
    return text + " (the corpus, collection, figures and this page are not counted)"


def version_drift() -> str:
    """Whether the installed packages are the locked ones (the lock is constraints.txt beside this source)."""
    if not environment.LOCK.is_file():
        return f"**Version drift:** not checked (no `{environment.LOCK.name}` beside this build's source)."
    drift = environment.version_drift(environment.LOCK)
    if not drift:
        return (f"**Version drift:** none; every installed package that `{environment.LOCK.name}` pins has its "
                "pinned version.")
    return ("**Version drift:** these installed packages differ from the lock, so numbers may differ from a locked "
            "build:\n\n" + "\n".join(f"* {line}" for line in drift))
