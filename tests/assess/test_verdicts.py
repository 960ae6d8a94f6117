"""Batch-size verdicts on constructed sweeps: outcomes, intervals, divergence, runs at chance, target_train_loss,
missing results (harness.assess.verdicts)."""
import json

import numpy as np
import pytest

from harness.assess import analysis, intervals, verdicts
from harness.assess import sweep as sweep_files
from tests.helpers.sweeps import batch_sweep, make_run


def verdict_for(tmp_path, finals, train_finals=None):
    df = sweep_files.read(batch_sweep(tmp_path / "sweep", finals, train_finals)).epochs
    return verdicts.batch_size_verdict(analysis.final_results(df))


def test_verdict_reproduced_with_seeds_and_interval(tmp_path):
    v = verdict_for(tmp_path, {8: [0.90, 0.91, 0.92], 32: [0.88, 0.87, 0.89], 128: [0.80, 0.81, 0.79]})
    assert v.outcome == "reproduced" and v.n_seeds == 3
    assert v.interval[0] > 0 and v.effect == pytest.approx(0.11) and v.rho < -0.9
    assert "reproduced" in v.headline and "n = 3 seeds" in v.headline and "±" in v.headline


def test_verdict_not_reproduced_when_large_batch_is_as_good(tmp_path):
    v = verdict_for(tmp_path, {8: [0.90, 0.91, 0.90], 128: [0.91, 0.90, 0.92]})
    assert v.outcome == "not reproduced" and v.interval[1] < verdicts.EQUIVALENCE_MARGIN
    assert "not reproduced" in v.headline


def test_verdict_inconclusive_when_seeds_disagree(tmp_path):
    v = verdict_for(tmp_path, {8: [0.95, 0.80, 0.88], 128: [0.86, 0.90, 0.81]})
    assert v.outcome == "inconclusive" and v.interval[0] < 0 < v.interval[1]


def test_verdict_with_one_seed_says_so_and_gives_no_interval(tmp_path):
    v = verdict_for(tmp_path, {8: [0.90], 32: [0.88], 128: [0.80]})
    assert v.outcome == "reproduced" and v.interval is None and v.n_seeds == 1
    assert "n = 1 seed" in v.headline and "indicative only" in v.headline
    flat = verdict_for(tmp_path / "flat", {8: [0.85], 128: [0.86]})
    assert flat.outcome == "not reproduced" and "n = 1" in flat.headline


def test_verdict_with_one_batch_size_is_inconclusive(tmp_path):
    v = verdict_for(tmp_path, {32: [0.9, 0.91]})
    assert v.outcome == "inconclusive" and "two batch sizes" in v.headline


def test_train_accuracy_note_tells_under_training_from_a_generalization_gap(tmp_path):
    under = verdict_for(tmp_path / "a", {8: [0.90, 0.91, 0.92], 128: [0.80, 0.81, 0.79]},
                        {8: [0.99, 0.99, 0.99], 128: [0.84, 0.85, 0.83]})
    assert "under-training" in under.details[1] and "0.990" in under.details[1]
    gap = verdict_for(tmp_path / "b", {8: [0.90, 0.91, 0.92], 128: [0.80, 0.81, 0.79]},
                      {8: [0.99, 0.99, 0.99], 128: [0.99, 0.98, 0.99]})
    assert "generalization gap" in gap.details[1] and "under-training" not in gap.details[1]


def test_a_steps_matched_drop_with_train_accuracy_falling_is_not_blamed_on_fewer_steps(tmp_path):
    """With budget=steps batch 128 takes batch 8's updates: its lower train accuracy is a worse fit per update, not
    "fewer optimizer steps in the same epochs"."""
    df = sweep_files.read(batch_sweep(tmp_path / "sweep", {8: [0.90, 0.91, 0.92], 128: [0.80, 0.81, 0.79]},
                                         {8: [0.99, 0.99, 0.99], 128: [0.84, 0.85, 0.83]})).epochs
    final = analysis.final_results(df)
    fewer = verdicts.batch_size_verdict(final).details[1]
    assert "fewer optimizer steps" in fewer and "at as many" not in fewer
    matched = verdicts.batch_size_verdict(final.assign(step=1500)).details[1]  # the runs as budget=steps ends them
    assert "at as many optimizer steps" in matched and "fewer optimizer steps" not in matched


def test_welch_interval_follows_the_welch_satterthwaite_formula():
    """Computed here from the formula (only the t quantile from SciPy): the mean difference ± t * its standard
    error, with the Welch-Satterthwaite degrees of freedom."""
    from scipy import stats

    a, b = np.array([0.9, 0.92, 0.91, 0.95]), np.array([0.8, 0.83, 0.79])
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = stats.t.ppf(0.975, dof) * np.sqrt(va + vb)
    diff = a.mean() - b.mean()
    assert intervals.welch_interval(a, b) == pytest.approx((diff - half, diff + half))
    assert intervals.welch_interval(b, a) == pytest.approx((-diff - half, -diff + half))
    narrow = intervals.welch_interval(a, b, level=0.5)
    assert diff - half < narrow[0] < diff < narrow[1] < diff + half


def test_welch_interval_of_identical_seeds_is_the_difference_itself():
    """No spread at all (SciPy's interval would be NaN): the difference, exactly."""
    assert intervals.welch_interval(np.array([0.75, 0.75]), np.array([0.5, 0.5, 0.5])) == (0.25, 0.25)


def _verdict(sweep):
    df = sweep_files.read(sweep).epochs
    return verdicts.batch_size_verdict(analysis.final_results(df), "all runs", analysis.runs_table(df))


def _set_record(run_dir, **fields):
    record = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**record, **fields}))


def test_a_diverged_batch_size_is_named_with_its_epoch_not_silently_dropped(tmp_path):
    sweep = batch_sweep(tmp_path / "s", {8: [0.90, 0.91], 32: [0.85, 0.86]})
    make_run(sweep, 4, status="diverged", batch_size=128, val=(0.3, 0.1))
    make_run(sweep, 5, status="diverged", batch_size=128, seed=1, val=(0.1,))
    v = _verdict(sweep)
    assert v.batch_sizes == [8, 32]
    assert "Batch 128 diverged in 2 of 2 runs (loss became NaN/inf at epochs 1, 2)" in v.headline
    assert "covers batch 8 to 32 only, without batch 128" in v.headline


def test_runs_at_chance_give_no_batch_size_claim(tmp_path):
    # val_acc 0.10-0.16 with 10 classes; the large batch is even "better": formerly a confident "not reproduced"
    sweep = batch_sweep(tmp_path / "s", {8: [0.10, 0.11, 0.12], 128: [0.15, 0.16, 0.14]})
    v = _verdict(sweep)
    assert v.outcome == "inconclusive" and v.interval is None
    assert "did not learn above chance" in v.headline and "chance 0.10 = 1/10 classes" in v.headline
    assert f"below {0.1 + verdicts.CHANCE_MARGIN:.2f}" in v.headline and "say nothing about batch size" in v.headline


def test_a_large_batch_stuck_at_chance_is_called_a_failure_to_train(tmp_path):
    v = _verdict(batch_sweep(tmp_path / "s", {8: [0.90, 0.91], 128: [0.11, 0.12]}))
    assert v.outcome == "reproduced"
    assert any(line.startswith("Batch 128 did not learn above chance") for line in v.details)


def test_target_train_loss_says_per_batch_size_whether_and_when_it_was_reached(tmp_path):
    sweep = batch_sweep(tmp_path / "s", {8: [0.90], 128: [0.80, 0.81]}, target_train_loss=0.5)
    _set_record(sweep / "0", target_reached_at_epoch=2)
    _set_record(sweep / "1", target_reached_at_epoch=3)  # batch 128: one run of two reached it
    v = _verdict(sweep)
    assert "Not loss-matched: target_train_loss 0.5 was not reached by batch 128 (1 of 2 run(s))" in v.headline
    line = next(d for d in v.details if d.startswith("target_train_loss 0.5"))
    assert "batch 8 reached it at epoch 2" in line and "batch 128 reached it in 1 of 2 runs (at epoch 3;" in line
    everyone = batch_sweep(tmp_path / "t", {8: [0.90], 128: [0.80]}, target_train_loss=0.5)
    for job in (0, 1):
        _set_record(everyone / str(job), target_reached_at_epoch=3)
    assert "Not loss-matched" not in _verdict(everyone).headline


def test_a_facet_without_two_batch_sizes_of_results_says_why(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, batch_size=16, status="failed", val=(), error="no data")
    make_run(sweep, 1, batch_size=32, status="failed", val=(), error="no data")
    v = _verdict(sweep)
    assert v.outcome == "inconclusive" and "found 0" in v.headline
    assert "batch 16: 1 failed (OSError), batch 32: 1 failed (OSError)" in v.headline


def test_the_claim_states_its_learning_rate_condition(tmp_path):
    """One learning rate for every batch size is the claim's condition, said in it; a scaled one is named per side."""
    one = verdict_for(tmp_path / "one", {8: [0.90, 0.91], 128: [0.80, 0.81]})
    assert one.headline.startswith("Larger batches gave lower validation accuracy at one learning rate (0.001) for "
                                   "every batch size: reproduced.")
    df = sweep_files.read(batch_sweep(tmp_path / "scaled", {8: [0.90, 0.91], 128: [0.80, 0.81]}, lr_scaling="linear",
                                      base_batch_size=8)).epochs
    scaled = verdicts.batch_size_verdict(analysis.final_results(df))
    assert scaled.headline.startswith("Larger batches gave lower validation accuracy: reproduced.")
    assert "The learning rate differed with the batch: 0.001 at batch 8, 0.016 at batch 128." in scaled.headline


def test_a_drop_names_the_diagnose_recover_and_choose_commands_of_its_own_setting(tmp_path):
    """The commands that split the drop, search the recipe that keeps b's accuracy and time every batch size to it:
    the verdict's batch sizes, the overrides every run shared (not the seed), each a line of its details, in the
    studies' order."""
    from harness.studies.registry import assess

    sweep = tmp_path / "s"
    for job, (batch, seed, val) in enumerate([(8, 0, 0.90), (8, 1, 0.91), (64, 0, 0.80), (64, 1, 0.81)]):
        make_run(sweep, job, batch_size=batch, seed=seed, epochs=3, val=(val - 0.2, val - 0.1, val),
                 overrides=[f"batch_size={batch}", f"seed={seed}", "epochs=3", "model.width=2.0",
                            "hydra.launcher.n_jobs=1"])
    [verdict] = assess(sweep).batch_verdicts
    assert verdict.next_steps == [
        ("diagnose", "python -m harness +study=diagnose batch_size=8,64 epochs=3 model.width=2.0 -m"),
        ("recover", "python -m harness +study=recover batch_size=8,64 epochs=3 model.width=2.0 -m"),
        ("choose", "python -m harness +study=choose batch_size=8,64 epochs=3 model.width=2.0 -m")]
    assert verdict.details[-3].startswith("To split this drop into its causes on this setting")
    assert verdict.details[-3].endswith(verdict.next_steps[0][1])
    assert verdict.details[-2] == ("To keep batch 8's accuracy at batch 64 (a recipe searched on a tuning slice, then "
                                   f"confirmed on every seed): {verdict.next_steps[1][1]}")
    assert verdict.details[-1].startswith("To find which batch size reaches batch 8's accuracy soonest on this "
                                          "machine") and verdict.details[-1].endswith(verdict.next_steps[2][1])
    flat = tmp_path / "flat"
    for job, (batch, val) in enumerate([(8, 0.90), (8, 0.91), (64, 0.91), (64, 0.90)]):
        make_run(flat, job, batch_size=batch, seed=job % 2, val=(val - 0.2, val - 0.1, val))
    [none] = assess(flat).batch_verdicts
    assert none.effect < verdicts.MIN_EFFECT and none.next_steps == []  # no drop to split
    assert not any("+study=" in line for line in none.details)
