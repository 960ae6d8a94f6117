"""Reading a sweep's files once (harness.assess.sweep): its runs, its epochs as one frame, the jobs not started,
what a command's end says of them; and the keys the report splits results by (harness.assess.analysis)."""
import json
import math

import pytest

from harness.assess import analysis
from harness.assess import sweep as sweep_files
from tests.helpers.sweeps import make_run


def test_loader_keeps_completed_failed_and_running_runs(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, val=(0.5, 0.7, 0.8))
    make_run(sweep, 1, status="failed", val=(), error="disk on fire", batch_size=64)
    make_run(sweep, 2, status="running", val=(0.4,), finished=False, batch_size=128)
    df = analysis.load_sweep(sweep)  # the documented way to a sweep's epochs (docs/api.md)
    assert df.equals(sweep_files.read(sweep).epochs)
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
    assert sweep_files.not_started_jobs(sweep) == ["1"]
    jobs = [{"job": str(n), "overrides": [f"batch_size={b}", f"seed={s}"]} for n, (b, s) in
            enumerate((b, s) for b in (8, 32, 128) for s in (0, 1, 2))]
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))  # as the command writes it
    assert sweep_files.not_started_jobs(sweep) == [str(n) for n in range(1, 9)]
    (sweep / "0").rename(sweep / "b8")  # hydra.sweep.subdir=b${batch_size}: runs are matched by their overrides
    make_run(sweep, 4, batch_size=32, seed=1)
    assert sweep_files.not_started_jobs(sweep) == ["1", "2", "3", "5", "6", "7", "8"]
    # resumed with tracking=mlflow (no run config): other overrides, the same run by its config's fingerprint
    from harness.store.run_files import config_hash

    record = json.loads((sweep / "4" / "run.json").read_text())
    jobs[4] = {**jobs[4], "overrides": [*jobs[4]["overrides"], "tracking=mlflow"],
               "config": config_hash(record["config"])}
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))
    assert sweep_files.not_started_jobs(sweep) == ["1", "2", "3", "5", "6", "7", "8"]


def test_run_json_target_epoch_reaches_the_frame(tmp_path):
    import json

    run_dir = make_run(tmp_path / "sweep", 0, target_train_loss=0.5)
    record = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**record, "target_reached_at_epoch": 2}))
    final = analysis.final_results(sweep_files.read(tmp_path / "sweep").epochs)
    assert final.loc[0, "target_reached_at_epoch"] == 2 and final.loc[0, "target_train_loss"] == 0.5


def test_loader_refuses_a_folder_without_runs(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run folders"):
        sweep_files.read(tmp_path).epochs


def test_varied_and_facet_keys(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8, shuffle=True, seed=0)
    make_run(sweep, 1, batch_size=64, shuffle=False, seed=1)
    df = sweep_files.read(sweep).epochs
    keys = sweep_files.read(sweep).keys
    assert set(analysis.varied_keys(df, keys)) == {"batch_size", "shuffle", "seed"}
    assert analysis.facet_keys(df, keys) == ["shuffle"]


def test_after_a_sweep_runs_still_running_or_never_started_count_as_not_finished(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8)
    make_run(sweep, 1, batch_size=32, status="running", finished=False)  # another command still holds it
    jobs = [{"job": str(n), "overrides": [f"batch_size={b}", "seed=0"]} for n, b in enumerate((8, 32, 128))]
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))
    assert sweep_files.failed_runs(sweep) == [] and sweep_files.unfinished_runs(sweep) == ["sweep/1", "sweep/2 (not started)"]


def test_failed_runs_are_those_whose_run_json_says_so(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8)
    make_run(sweep, 1, batch_size=32, status="failed", val=(), error="disk on fire")
    make_run(sweep, 2, batch_size=64, status="diverged", val=(0.3,))  # a result, not a failure
    make_run(sweep, 3, batch_size=128, status="interrupted", val=(0.4,))
    assert sweep_files.failed_runs(sweep) == ["sweep/1"]
    assert sweep_files.unfinished_runs(sweep) == []  # interrupted: ended, and resumed by the same command


@pytest.mark.parametrize("status,outcome", [("completed", ([], [])), ("diverged", ([], [])),
                                            ("failed", (["r/0"], [])), ("running", ([], ["r/0"])),
                                            ("interrupted", ([], []))])
def test_the_outcome_of_a_single_run_is_what_its_run_json_says(tmp_path, status, outcome):
    run_dir = make_run(tmp_path / "r", 0, status=status, finished=status != "running")
    assert sweep_files.run_outcome(run_dir) == outcome


def test_a_single_run_without_run_json_failed(tmp_path):
    assert sweep_files.run_outcome(tmp_path / "never") == ([str(tmp_path / "never")], [])


def test_a_ramp_is_read_under_its_schedule_apart_from_the_fixed_batches(tmp_path):
    """A batch_schedule is not a batch size: its runs are a facet of their own, named by the schedule, each at its
    first phase's batch on the batch axis; the fixed batches' facet is `none`, not a missing value that a grouping
    drops."""
    import pandas as pd

    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=32)
    make_run(sweep, 1, batch_size=128)
    make_run(sweep, 2, batch_size=32, seed=1)
    path = sweep / "2" / "metrics.parquet"
    frame = pd.read_parquet(path)
    frame["batch_schedule"], frame["global_batch_size"] = "0:32,1:128,2:512", [32, 128, 512]
    frame.to_parquet(path)
    read = sweep_files.read(sweep)
    df = read.epochs
    assert df.loc[df["run_id"] == "sweep/2", "global_batch_size"].tolist() == [32, 32, 32]
    assert df.drop_duplicates("run_id")["batch_schedule"].tolist() == ["none", "none", "32→128→512 (after epochs 1, 2)"]
    assert analysis.facet_keys(df, read.keys) == ["batch_schedule"]
    assert [label for label, _ in analysis.groups(df, ["batch_schedule"])] == [
        "batch_schedule=none", "batch_schedule=32→128→512 (after epochs 1, 2)"]
