"""The study keys' effects on data and schedules, and each finding from constructed sweeps."""
import math

import numpy as np
import pytest

from harness import analysis, studies, transforms
from harness.batching import plan_batches, plan_schedule
from tests.sweeps import make_run
from tests.test_transforms import labelled


def test_train_fraction_keeps_exactly_that_share_of_every_class():
    x, y = labelled([400, 300, 200])
    xs, ys = transforms.take_fraction(x, y, 0.1, np.random.default_rng(0))
    assert list(np.bincount(ys)) == [40, 30, 20]
    assert np.array_equal(xs[:, 0] % 10, ys)


def test_preprocess_mismatch_really_differs_and_none_is_untouched():
    rng = np.random.default_rng(0)
    x_train, x_val = rng.normal(size=(100, 40, 1)).astype(np.float32), rng.normal(size=(50, 40, 1)).astype(np.float32)
    assert transforms.mismatch_validation(x_val, x_train, "none") is x_val
    assert np.allclose(transforms.mismatch_validation(x_val, x_train, "unscaled"), 255 * x_val)
    shifted = transforms.mismatch_validation(x_val, x_train, "shifted")
    assert np.allclose(shifted - x_val, x_train.std())


class Train:
    """A TrainConfig stand-in with the schedule keys."""

    def __init__(self, **kw):
        self.lr, self.lr_scaling, self.base_batch_size, self.warmup_epochs = 0.001, "none", 32, 0.0
        self.budget, self.budget_steps, self.epochs = "epochs", None, 15
        self.__dict__.update(kw)


@pytest.mark.parametrize("scaling,factor", [("none", 1.0), ("linear", 4.0), ("sqrt", 2.0)])
def test_lr_scaling_relative_to_base_batch(scaling, factor):
    plan = plan_batches(128, False, 1, 4000)
    assert plan_schedule(plan, Train(lr_scaling=scaling)).peak_lr == pytest.approx(0.001 * factor)


def test_step_budget_gives_every_batch_size_the_same_updates():
    for batch in (8, 32, 128):
        plan = plan_batches(batch, False, 1, 4000)
        schedule = plan_schedule(plan, Train(budget="steps", budget_steps=7500))
        assert schedule.total_steps == 7500
        assert schedule.epochs == math.ceil(7500 / plan.steps_per_epoch)


def test_warmup_rises_linearly_to_the_peak_then_holds():
    from harness.train import WarmupSchedule

    plan = plan_batches(8, False, 1, 4000)  # 500 steps per epoch
    schedule = plan_schedule(plan, Train(lr_scaling="linear", base_batch_size=8, warmup_epochs=2.0))
    assert schedule.warmup_steps == 1000 and schedule.peak_lr == pytest.approx(0.001)
    warmup = WarmupSchedule(schedule.peak_lr, schedule.warmup_steps)
    values = [float(warmup(step)) for step in (0, 499, 999, 1000, 5000)]
    assert values == pytest.approx([0.001 / 1000, 0.001 * 500 / 1000, 0.001, 0.001, 0.001])


def _final(sweep):
    df = analysis.load_sweep(sweep)
    keys = analysis.config_keys(sweep)
    return df, analysis.final_results(df), analysis.varied_keys(df, keys)


def test_shuffle_finding_sees_the_running_accuracy_illusion(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, shuffle=True, val=(0.5, 0.8), train_eval=(0.55, 0.85))
    make_run(sweep, 1, shuffle=False, val=(0.1, 0.12), train_eval=(0.67, 0.12))  # running train_acc = 0.65
    df, final, varied = _final(sweep)
    finding = studies.shuffle_finding(df, varied)
    assert finding.outcome == "reproduced" and "0.65" in finding.details[0]
    make_run(tmp_path / "t", 0, shuffle=True, val=(0.5, 0.8))
    make_run(tmp_path / "t", 1, shuffle=False, val=(0.4, 0.7))
    df, final, varied = _final(tmp_path / "t")
    assert studies.shuffle_finding(df, varied).outcome == "not reproduced"


def test_imbalance_finding_compares_with_matched_balanced_runs(tmp_path):
    sweep = tmp_path / "s"
    for seed in (0, 1):
        make_run(sweep, seed, imbalance=0.0, seed=seed, val=(0.9,), train_eval=(0.95,))
        make_run(sweep, 2 + seed, imbalance=0.95, seed=seed, val=(0.6,), train_eval=(0.97,))
    df, final, varied = _final(sweep)
    finding = studies.imbalance_finding(final, varied)
    assert finding.outcome == "reproduced" and "drop +0.300" in finding.details[0]


def test_imbalance_finding_never_averages_over_batch_size(tmp_path):
    sweep = tmp_path / "s"
    for job, (imbalance, batch, val) in enumerate([(0.0, 8, 0.60), (0.0, 128, 0.30), (0.9, 8, 0.10), (0.9, 128, 0.10)]):
        make_run(sweep, job, imbalance=imbalance, batch_size=batch, val=(val,), train_eval=(0.9,))
    df, final, varied = _final(sweep)
    details = studies.imbalance_finding(final, varied).details
    assert len(details) == 2
    assert "(batch_size=8)" in details[0] and "vs 0.600 balanced (drop +0.500)" in details[0]
    assert "(batch_size=128)" in details[1] and "vs 0.300 balanced (drop +0.200)" in details[1]
    assert "0.450" not in " ".join(details)  # the mean of both batch sizes is no reference


def test_shuffle_finding_splits_by_every_other_varied_key(tmp_path):
    sweep = tmp_path / "s"
    for job, (shuffle, imbalance, running) in enumerate([(True, 0.0, 0.6), (False, 0.0, 0.7), (True, 0.9, 0.6),
                                                          (False, 0.9, 0.1)]):
        make_run(sweep, job, shuffle=shuffle, imbalance=imbalance, val=(0.1,), train_eval=(running + 0.02,))
    df, final, varied = _final(sweep)
    details = studies.shuffle_finding(df, varied).details
    assert details[0].startswith("batch 32 (imbalance=0.0): at epoch 1 the running train_acc was 0.70")
    assert details[1].startswith("batch 32 (imbalance=0.9): at epoch 1 the running train_acc was 0.10")


def test_preprocess_finding_needs_val_down_with_train_unchanged(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, preprocess_mismatch="none", val=(0.9,), train_eval=(0.95,))
    make_run(sweep, 1, preprocess_mismatch="unscaled", val=(0.2,), train_eval=(0.95,))
    make_run(sweep, 2, preprocess_mismatch="shifted", val=(0.89,), train_eval=(0.95,))
    df, final, varied = _final(sweep)
    finding = studies.preprocess_finding(final, varied)
    assert finding.outcome == "reproduced" and len(finding.details) == 2


def test_capacity_finding_reads_the_gap_across_width_and_data(tmp_path):
    sweep = tmp_path / "s"
    job = 0
    for width in (0.25, 4.0):
        for fraction in (0.1, 1.0):
            gap = 0.3 if (width, fraction) == (4.0, 0.1) else 0.05
            make_run(sweep, job, **{"model.width": width}, train_fraction=fraction, val=(0.9 - gap,),
                     train_eval=(0.9,))
            job += 1
    df, final, varied = _final(sweep)
    finding = studies.capacity_finding(final, varied)
    assert finding.outcome == "reproduced" and "+0.250" in finding.headline and len(finding.details) == 4


def test_controls_finding_says_how_much_of_the_drop_remains(tmp_path):
    sweep = tmp_path / "s"
    arms = [({"budget": "epochs"}, 0.10), ({"budget": "steps", "budget_steps": 7500}, 0.04),
            ({"budget": "steps", "budget_steps": 7500, "lr_scaling": "linear", "warmup_epochs": 2.0}, 0.005)]
    job = 0
    for arm, drop in arms:
        for batch, val in ((8, 0.92), (128, 0.92 - drop)):
            make_run(sweep, job, batch_size=batch, val=(val,), **arm)  # other keys at their defaults
            job += 1
    df, final, varied = _final(sweep)
    finding = studies.controls_finding(final, varied)
    assert finding.outcome == "not reproduced"  # half a point left: under one point
    assert "+0.100" in finding.headline and "(5% of it remains)" in finding.headline
    assert len(finding.details) == 3


def test_step_budget_without_a_count_matches_the_base_batch():
    plan = plan_batches(128, False, 1, 4000)
    schedule = plan_schedule(plan, Train(budget="steps", budget_steps=None, base_batch_size=8, epochs=15))
    assert schedule.total_steps == 500 * 15 and schedule.epochs == math.ceil(7500 / 32)


SECTIONS = {
    "batch_size": "Larger batches gave lower validation accuracy",
    "shuffle": "Unshuffled data",
    "imbalance": "Class imbalance",
    "preprocess": "Preprocessing mismatch",
    "capacity": "Model capacity and data size",
    "controls": "Controls: steps and learning rate",
    "causes": "Class imbalance",
}


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(SECTIONS))
def test_every_study_runs_end_to_end_shrunken(study, tmp_path):
    import json

    from tests.conftest import run_harness

    sweep = tmp_path / "sweep"
    proc = run_harness(f"+study={study}", "dataset.num_samples=1000", "epochs=1", "seed=0",
                       f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    statuses = {json.loads(p.read_text())["status"] for p in sweep.glob("*/run.json")}
    assert statuses <= {"completed", "diverged"} and statuses
    html = (tmp_path / proc.stdout.strip().splitlines()[-1]).read_text()
    assert SECTIONS[study] in html
