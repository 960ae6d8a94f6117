import json
import math

import pandas as pd
import pytest

from harness import analysis, verdicts
from tests.sweeps import batch_sweep, make_run


def test_loader_keeps_completed_failed_and_running_runs(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, val=(0.5, 0.7, 0.8))
    make_run(sweep, 1, status="failed", val=(), error="disk on fire", batch_size=64)
    make_run(sweep, 2, status="running", val=(0.4,), finished=False, batch_size=128)
    df = analysis.load_sweep(sweep)
    assert len(df) == 3 + 1 + 1
    runs = analysis.runs_table(df)
    assert list(runs["status"]) == ["completed", "failed", "running"]
    assert list(runs["global_batch_size"]) == [32, 64, 128]
    assert runs.loc[1, "error_message"] == "disk on fire" and math.isnan(runs.loc[1, "val_acc"])
    assert runs.loc[0, "wall_seconds"] == 42.0
    assert math.isnan(runs.loc[2, "wall_seconds"])  # still marked running (maybe killed): unknown, not "until now"
    assert runs.loc[2, "epochs_completed"] == 1 and runs.loc[2, "val_acc"] == 0.4
    final = analysis.final_results(df)
    assert list(final["run_id"]) == ["sweep/0"]  # verdicts use completed runs only
    assert final.loc[0, "best_val_acc"] == 0.8 and final.loc[0, "gap"] == pytest.approx(0.05)


def test_jobs_without_run_json_are_not_started(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8)
    (sweep / "1").mkdir()
    assert analysis.not_started_jobs(sweep) == ["1"]
    jobs = [{"job": str(n), "overrides": [f"batch_size={b}", f"seed={s}"]} for n, (b, s) in
            enumerate((b, s) for b in (8, 32, 128) for s in (0, 1, 2))]
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))  # as the command writes it
    assert analysis.not_started_jobs(sweep) == [str(n) for n in range(1, 9)]
    (sweep / "0").rename(sweep / "b8")  # hydra.sweep.subdir=b${batch_size}: runs are matched by their overrides
    make_run(sweep, 4, batch_size=32, seed=1)
    assert analysis.not_started_jobs(sweep) == ["1", "2", "3", "5", "6", "7", "8"]


def test_run_json_target_epoch_reaches_the_frame(tmp_path):
    import json

    run_dir = make_run(tmp_path / "sweep", 0, target_train_loss=0.5)
    record = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**record, "target_reached_at_epoch": 2}))
    final = analysis.final_results(analysis.load_sweep(tmp_path / "sweep"))
    assert final.loc[0, "target_reached_at_epoch"] == 2 and final.loc[0, "target_train_loss"] == 0.5


def test_loader_refuses_a_folder_without_runs(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run folders"):
        analysis.load_sweep(tmp_path)


def test_varied_and_facet_keys(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8, shuffle=True, seed=0)
    make_run(sweep, 1, batch_size=64, shuffle=False, seed=1)
    df = analysis.load_sweep(sweep)
    keys = analysis.config_keys(sweep)
    assert set(analysis.varied_keys(df, keys)) == {"batch_size", "shuffle", "seed"}
    assert analysis.facet_keys(df, keys) == ["shuffle"]


def verdict_for(tmp_path, finals, train_finals=None):
    df = analysis.load_sweep(batch_sweep(tmp_path / "sweep", finals, train_finals))
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


def test_welch_interval_matches_scipy():
    from scipy import stats

    a, b = [0.9, 0.92, 0.91, 0.95], [0.8, 0.83, 0.79]
    low, high = verdicts.welch_interval(pd.Series(a).to_numpy(), pd.Series(b).to_numpy())
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (low, high) == pytest.approx((ci.low, ci.high))


def test_after_a_sweep_runs_still_running_or_never_started_count_as_not_finished(tmp_path):
    from harness.cli import failed_runs, unfinished_runs

    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8)
    make_run(sweep, 1, batch_size=32, status="running", finished=False)  # another command still holds it
    jobs = [{"job": str(n), "overrides": [f"batch_size={b}", "seed=0"]} for n, b in enumerate((8, 32, 128))]
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))
    assert failed_runs(sweep) == [] and unfinished_runs(sweep) == ["sweep/1", "sweep/2 (not started)"]
