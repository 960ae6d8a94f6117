"""+study=scaling's reading: McCandlish's S = S_min(1 + B_crit/B) recovered from synthetic steps to target with
noise, the learning rate chosen per batch size on steps alone, the regimes, and the gradient noise scale against
the closed form of a linear model whose per-sample gradients have a known covariance."""
import math

import numpy as np
import pandas as pd
import pytest

from harness.assess.analysis import BATCH
from harness.probes import noise_scale
from harness.studies.scaling import mccandlish
from harness.studies.scaling import reading as scaling
from harness.studies.scaling import words

BATCHES = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]


def _synthetic_runs(s_min: float, b_crit: float, noise: float = 0.05, seeds: int = 3, rng_seed: int = 0,
                    missed: tuple = ()) -> pd.DataFrame:
    """Steps to target for 3 learning rates per batch size: the middle one follows the model (times lognormal
    noise per seed), the others take 1.5x and 2x as many steps; (batch, lr) cells in `missed` never reach."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for batch in BATCHES:
        for lr, slower in ((0.5, 1.5), (1.0, 1.0), (2.0, 2.0)):
            for seed in range(seeds):
                steps = s_min * (1 + b_crit / batch) * slower * math.exp(rng.normal(0, noise))
                reached = (batch, lr) not in missed
                rows.append({"run_id": f"{batch}-{lr}-{seed}", BATCH: batch, "peak_lr": lr * math.sqrt(batch),
                             "seed": seed, "status": "completed", "steps": round(steps) if reached else None,
                             "samples": round(steps) * batch if reached else None, "resolution": 0.05,
                             "val_acc": 0.8, "noise_batch": 32, "gram": None})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("s_min, b_crit", [(40.0, 100.0), (25.0, 600.0), (200.0, 30.0)])
def test_the_fit_recovers_s_min_and_b_crit_within_10_percent_from_noisy_steps(s_min, b_crit):
    runs = _synthetic_runs(s_min, b_crit)
    points = scaling.choose(runs)
    assert all(p.lr == pytest.approx(math.sqrt(p.batch)) for p in points)  # the middle, fastest learning rate
    fit = scaling.fit_bootstrap(runs, points, replicates=300)
    assert fit.follows
    assert fit.s_min == pytest.approx(s_min, rel=0.1) and fit.b_crit == pytest.approx(b_crit, rel=0.1)
    low, high = fit.b_crit_interval.low, fit.b_crit_interval.high
    assert fit.b_crit_interval.level is None  # three seeds a cell: the bootstrap's range, no coverage claimed
    assert low < fit.b_crit < high and high - low < 0.5 * fit.b_crit


def test_a_curve_the_model_cannot_follow_is_said_so_and_no_b_crit_is_claimed():
    runs = _synthetic_runs(40.0, 100.0, noise=0.0)
    bump = runs[BATCH] == 256  # a batch size twice as slow as its neighbours: not S_min(1 + B_crit/B)
    runs.loc[bump, "steps"] = runs.loc[bump, "steps"] * 3
    found = scaling.Scaling(0.8, 400, scaling.choose(runs), runs, None, mccandlish.Noise(None, None, 0))
    found.fit = scaling.fit_bootstrap(runs, found.points, replicates=50)
    assert not found.fit.follows and found.fit.worst[0] == 256
    text = " ".join(words.lines(found))
    assert "does not follow McCandlish's model" in text and "no critical batch size is claimed" in text


def test_regimes_from_the_measured_steps_and_a_batch_size_without_a_point():
    runs = _synthetic_runs(10.0, 200.0, noise=0.0, missed=tuple((2048, lr) for lr in (0.5, 1.0, 2.0)))
    points = scaling.choose(runs)
    scaling._regimes(points)
    by = {p.batch: p for p in points}
    assert by[2048].steps is None and by[2048].lr is None  # no learning rate reached: no point
    assert by[8].regime is None
    assert by[16].regime == "perfect scaling"       # (1 + 200/16) / (1 + 200/8) = 0.52
    assert by[256].regime == "diminishing returns"  # (1 + 200/256) / (1 + 200/128) = 0.69
    assert by[1024].regime == "no gain"             # (1 + 200/1024) / (1 + 200/512) = 0.86
    for p in points[1:-1]:
        expected = ("perfect scaling" if p.ratio <= 0.5 * 1.2 else "no gain" if p.ratio >= 1 / 1.2
                    else "diminishing returns")
        assert p.regime == expected


def test_a_learning_rate_with_a_seed_that_missed_the_target_is_not_chosen():
    runs = _synthetic_runs(40.0, 100.0, noise=0.0)
    one = runs.index[(runs[BATCH] == 64) & (runs["peak_lr"] == 8.0) & (runs["seed"] == 0)]
    runs.loc[one, "steps"] = None  # the fastest learning rate at batch 64 missed once
    point = next(p for p in scaling.choose(runs) if p.batch == 64)
    assert point.lr == pytest.approx(0.5 * 8.0)  # the next fastest whose seeds all reached


def _linear_model_gradients(n: int, d: int, rng) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per-sample gradients of the squared error of a linear model, g_i = (x_i·w − y_i)x_i, over a finite
    population of n samples: the true gradient G is their mean and tr(Σ) their variance's trace."""
    x = rng.standard_normal((n, d))
    w_true, w = rng.standard_normal(d), rng.standard_normal(d)
    y = x @ w_true + 0.5 * rng.standard_normal(n)
    per_sample = (x @ w - y)[:, None] * x
    mean = per_sample.mean(axis=0)
    trace = float(np.sum(per_sample.var(axis=0)))
    return per_sample, mean, float(mean @ mean), trace


def test_the_noise_scale_from_batch_gradients_matches_the_linear_models_closed_form():
    rng = np.random.default_rng(3)
    per_sample, _, g2, trace = _linear_model_gradients(20000, 10, rng)
    small, batches = 32, 64
    grams = []
    for _ in range(40):  # 40 runs, each 64 batches of 32 samples drawn with replacement
        chosen = rng.integers(0, len(per_sample), (batches, small))
        gradients = [per_sample[c].mean(axis=0) for c in chosen]
        grams.append(noise_scale.gram(gradients))
        direct = noise_scale.from_batch_gradients(gradients, small)
        assert noise_scale.from_gram(grams[-1], small).noise_scale == pytest.approx(direct.noise_scale)
    pooled = mccandlish.noise_at_target(grams, small, bootstrap=400)
    assert pooled.value == pytest.approx(trace / g2, rel=0.1)
    low, high = pooled.interval.low, pooled.interval.high
    assert low < trace / g2 < high and pooled.non_positive == 0


def test_a_noise_scale_whose_squared_gradient_is_not_positive_is_inconclusive_not_clamped():
    rng = np.random.default_rng(5)

    def run(scale: float) -> np.ndarray:  # 8 batches of 32 around a true gradient of `scale` in every coordinate
        return noise_scale.gram([scale + rng.standard_normal(50) / np.sqrt(32) for _ in range(8)])

    flat = [run(0.0) for _ in range(6)]  # |G| = 0: the estimates of |G|² scatter around 0
    estimates = [noise_scale.from_gram(g, 32) for g in flat]
    assert min(e.grad_norm_sq for e in estimates) < 0 < max(e.grad_norm_sq for e in estimates)
    found = mccandlish.noise_at_target(flat, 32, bootstrap=200)
    pooled = np.mean([e.grad_norm_sq for e in estimates])
    assert (found.value is None) == (pooled <= 0)
    assert found.non_positive > 0 and math.isinf(found.interval.high)  # an unbounded interval, not a clamped one
    clear = mccandlish.noise_at_target([run(1.0) for _ in range(6)], 32, bootstrap=200)
    assert clear.value is not None and clear.non_positive == 0 and math.isfinite(clear.interval.high)
    negative = next(g for g in (run(0.0) for _ in range(100)) if noise_scale.from_gram(g, 32).grad_norm_sq < 0)
    assert mccandlish.noise_at_target([negative], 32).value is None


def test_a_scaling_study_over_two_optimizers_fits_one_curve_and_critical_batch_each(tmp_path):
    """`+study=scaling optimizer=adam,lamb` as the command plans it (constructed runs), each run's target.json
    made so that adam's steps follow S_min(1 + B_crit/B) with B_crit 64 and lamb's with 512: one curve per optimizer,
    each named by it, each fit finding its own B_crit; the report has both."""
    import json

    from harness.report import html
    from harness.store import target_file
    from harness.studies.registry import assess
    from tests.helpers.sweeps import study_sweep

    sweep = study_sweep(tmp_path / "s", "+study=scaling", "optimizer=adam,lamb", "batch_size=8,32,128,512",
                        "lr_factor=1.0", "seed=0,1")
    crit = {"adam": 64.0, "lamb": 512.0}
    rng = np.random.default_rng(0)
    for record_path in sweep.glob("*/run.json"):
        config = json.loads(record_path.read_text())["config"]
        steps = round(20.0 * (1 + crit[config["optimizer"]] / config["batch_size"]) * rng.uniform(0.98, 1.02))
        target_file.write(record_path.parent, {"target_tune_acc": 0.8, "steps_to_target": steps,
                                               "samples_to_target": steps * config["batch_size"],
                                               "target_resolution": 0.05, "target_checks": 5,
                                               "tune_acc_at_target": 0.81, "val_acc_at_target": 0.8,
                                               "val_loss_at_target": 0.6, "noise_batch": 32, "noise_gram": None,
                                               "noise_scale_at_target": None})
    a = assess(sweep)
    assert [s.group for s in a.reading] == ["optimizer=adam", "optimizer=lamb"]
    for s, b_crit in zip(a.reading, (64.0, 512.0)):
        assert [p.batch for p in s.points] == [8, 32, 128, 512] and s.fit is not None
        assert s.fit.b_crit == pytest.approx(b_crit, rel=0.15)
    page = html.build_report(sweep)
    assert page.count('<div class="facet">optimizer=lamb</div>') == 2  # its verdict and its section
    assert "Steps and samples to the target vs batch size (optimizer=adam)" in page
