"""Training to a plateau (train.plateau): the rule on curves with known truth, and a cell the rule stops."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pandas as pd
import pytest

from attnlab.core.config import validate_config
from attnlab.core.errors import ConfigError
from attnlab.training.schedule import plateau_gain, plateaued
from processes import run, trainer_args

EVERY, PATIENCE, TOLERANCE = 250, 1000, 0.002


def true_loss(step):
    """A curve with a known plateau: 1.45 + 1.0 · exp(−step / 1500) nats."""
    return 1.45 + 1.0 * np.exp(-np.asarray(step, dtype=float) / 1500.0)


def stop_step(curve_fn, noise: float, rng, ceiling: int = 30_000) -> int:
    """Where the rule stops a cell whose evaluations read curve_fn(step) plus Gaussian noise of this size."""
    evaluations = []
    for step in range(0, ceiling + 1, EVERY):
        evaluations.append((step, float(curve_fn(step)) + noise * float(rng.standard_normal())))
        if plateaued(evaluations, PATIENCE, TOLERANCE):
            return step
    return ceiling


def true_plateau(margin: float = 0.0) -> int:
    """The first evaluation at which the true curve's gain over the window is at most TOLERANCE + margin."""
    steps = np.arange(0, 30_001, EVERY)
    for step in steps[steps >= PATIENCE]:
        gain = (true_loss(step - PATIENCE) - true_loss(step)) / true_loss(step - PATIENCE)
        if gain <= TOLERANCE + margin:
            return int(step)
    raise AssertionError("the test curve never plateaus")


def test_the_rule_waits_for_a_whole_window_then_reads_the_gain_over_it():
    assert plateau_gain([(0, 4.0), (250, 3.0)], 1000) is None
    flat = [(s, 2.0) for s in range(0, 1250, 250)]
    assert plateau_gain(flat, 1000) == 0.0 and plateaued(flat, 1000, 0.0)
    falling = [(s, 2.0 - s * 1e-4) for s in range(0, 2250, 250)]  # 0.1 nats over the last 1000 steps
    assert plateau_gain(falling, 1000) == pytest.approx(0.1 / (2.0 - 0.1))
    assert not plateaued(falling, 1000, 0.05) and plateaued(falling, 1000, 0.06)
    # a worse evaluation after the best does not count as improvement, nor a non-finite one as a best
    assert plateau_gain([(0, 2.0), (1250, 1.9), (2000, 2.5), (2250, math.nan)], 1000) == 0.0
    assert plateau_gain([(0, 2.0), (1250, 1.9), (2000, 1.8), (2250, math.nan)], 1000) == pytest.approx(0.1 / 1.9)


def test_a_noisy_evaluation_cannot_stop_a_cell_before_its_plateau():
    """Evaluations on the whole validation split (train.eval_whole_split) leave only the model's own
    fluctuation between evaluations. At that noise (σ = 1e-4 nats, below the fluctuation read off settle
    curves), no run of 1,000 stops before the point where the true curve still gains TOLERANCE plus five
    noise widths over the window, and the typical run stops within one evaluation of the true plateau."""
    rng = np.random.default_rng(0)
    sigma = 1e-4
    stops = np.array([stop_step(true_loss, sigma, rng) for _ in range(1000)])
    earliest = true_plateau(margin=2 * 5 * sigma / 1.45)
    assert stops.min() >= earliest, (stops.min(), earliest)
    assert abs(float(np.median(stops)) - true_plateau()) <= EVERY


def test_the_noise_test_fails_at_the_noise_of_a_few_sampled_batches():
    """The control that shows the test above can fail: two sampled batches of the smoke model (σ about 0.02
    nats) stop many runs long before the true plateau, which is why settle evaluates the whole split."""
    rng = np.random.default_rng(0)
    stops = np.array([stop_step(true_loss, 0.02, rng) for _ in range(200)])
    assert (stops < true_plateau(margin=0.002)).mean() > 0.25


def test_a_plateau_config_refuses_a_window_that_is_not_whole_evaluations(smoke_config):
    cfg = copy.deepcopy(smoke_config)
    cfg["train"]["plateau"] = {"patience": 30, "tolerance": 0.01}
    with pytest.raises(ConfigError, match="train.plateau.patience: 30 is not a multiple of train.eval_every 20"):
        validate_config(cfg)
    cfg["train"]["plateau"] = {"patience": 60, "tolerance": 0.01}
    with pytest.raises(ConfigError, match="not below train.steps 60"):
        validate_config(cfg)
    cfg["train"]["plateau"] = {"patience": 20, "tolerance": 0.01, "min_steps": 60}
    with pytest.raises(ConfigError, match="min_steps 60 is not below train.steps 60"):
        validate_config(cfg)


@pytest.mark.slow
def test_the_rule_stops_a_cell_and_its_bundle_says_where(tiny_cfg, small_corpus, tmp_path):
    """A tolerance no gain can beat stops the cell at the first whole window; the ceiling is never reached, the
    last attention map is where it stopped, and runs.csv does not call it still improving."""
    from attnlab.pipeline.tables.runs import late_gain

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=200, eval_every=10, eval_whole_split=True, plateau={"patience": 20, "tolerance": 0.99})
    result = run(trainer_args(cfg, tmp_path / "cell", corpus))
    assert result.returncode == 0, result.stderr[-3000:]
    bundle = json.loads((tmp_path / "cell" / "bundle.json").read_text())
    assert bundle["plateau_step"] == 20 and bundle["steps_done"] == 20
    curve = pd.read_csv(tmp_path / "cell" / "curve.csv")
    assert curve.step.max() == 20
    # the same cell with min_steps 50 runs on to the first evaluation at or after it
    cfg["train"]["plateau"]["min_steps"] = 50
    result = run(trainer_args(cfg, tmp_path / "later", corpus))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "later" / "bundle.json").read_text())["plateau_step"] == 50
    # every evaluation read the whole split, so the best loss is the whole-split loss of the best checkpoint
    assert bundle["best_val_loss"] == pytest.approx(bundle["best_val_loss_whole_split"], rel=1e-5)
    with np.load(tmp_path / "cell" / "attention.npz") as attention:
        assert int(attention["steps"][-1]) == 20
    assert late_gain(dict(bundle, path=str(tmp_path / "cell")))["improving"] is False


@pytest.mark.slow
def test_a_cell_at_its_ceiling_is_still_improving_when_its_curve_says_so(tiny_cfg, small_corpus, tmp_path):
    """A tolerance no curve meets (0) runs the cell to train.steps, reported as the curve says."""
    from attnlab.pipeline.tables.runs import late_gain

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=60, eval_every=10, plateau={"patience": 20, "tolerance": 0.0})
    result = run(trainer_args(cfg, tmp_path / "cell", corpus, "softmax", "0.01"))
    assert result.returncode == 0, result.stderr[-3000:]
    bundle = json.loads((tmp_path / "cell" / "bundle.json").read_text())
    assert bundle["plateau_step"] is None and bundle["steps_done"] == 60
    gain = late_gain(dict(bundle, path=str(tmp_path / "cell")))
    assert gain["improving"] is (gain["late_gain"] > 0.005)


def first_stop(curve: pd.DataFrame, column: str, patience: int, tolerance: float) -> int | None:
    """Where the plateau rule, reading `column` of a curve, stops its cell (None: it runs to its ceiling)."""
    evaluations = []
    for step, val in zip(curve.step, curve[column]):
        evaluations.append((int(step), float(val)))
        if plateaued(evaluations, patience, tolerance):
            return int(step)
    return None


def test_the_rule_reads_the_select_half_of_the_validation_windows(tiny_cfg, small_corpus, tmp_path):
    """A cell trained to its ceiling gives the curve; at a tolerance where the rule would stop it at one step on
    the full-window loss and at another on the select half, the same cell under that rule stops at the select
    half's step (training is deterministic, so its curve up to there is the same)."""
    from attnlab.core.cell_key import CellKey
    from pack_of_one import train_alone

    corpus, sha256 = small_corpus
    cfg = copy.deepcopy(tiny_cfg)
    cfg["data"]["sha256"] = sha256
    cfg["train"].update(steps=80, eval_every=5)
    key, patience, silent = CellKey.of("softmax", 0.01, 0), 10, (lambda *_: None)
    train_alone(cfg, key, corpus, tmp_path / "ceiling", log=silent)
    curve = pd.read_csv(tmp_path / "ceiling" / "curve.csv")
    gains = sorted({gain for column in ("val_loss", "val_loss_select") for end in range(1, len(curve) + 1)
                    if (gain := plateau_gain(list(zip(curve.step[:end], curve[column][:end])), patience)) is not None})
    stops = {(low + high) / 2: (first_stop(curve, "val_loss_select", patience, (low + high) / 2),
                                first_stop(curve, "val_loss", patience, (low + high) / 2))
             for low, high in zip(gains, gains[1:])}  # between every two gains either column reads
    apart = [tolerance for tolerance, (select, full) in stops.items() if select is not None and select != full]
    assert apart, "no tolerance tells the two columns apart on this curve: the test would check nothing"
    cfg["train"]["plateau"] = {"patience": patience, "tolerance": apart[0]}
    stopped = train_alone(cfg, key, corpus, tmp_path / "plateau", log=silent)
    assert stopped["plateau_step"] == stops[apart[0]][0] != stops[apart[0]][1]
