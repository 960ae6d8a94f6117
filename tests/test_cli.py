"""The command line as a user runs it: real `python -m harness` processes writing into tmp_path."""
import json

import pandas as pd
import pytest

from tests.conftest import TINY, run_harness

pytestmark = pytest.mark.slow
TIMING = ["epoch_seconds", "samples_per_second"]


def test_multirun_sweeps_batch_size_and_writes_every_run_and_the_report(smoke_sweep):
    cwd, proc = smoke_sweep
    sweep = cwd / "sweeps" / "smoke"
    runs = sorted(p for p in sweep.iterdir() if p.is_dir() and p.name.isdigit())
    assert [p.name for p in runs] == ["0", "1"]
    batch_sizes = []
    for run in runs:
        record = json.loads((run / "run.json").read_text())
        assert record["status"] == "completed" and record["epochs_completed"] == 2
        frame = pd.read_parquet(run / "metrics.parquet")
        assert len(frame) == 2 and frame["run_id"].iloc[0] == f"smoke/{run.name}"
        batch_sizes.append(int(frame["batch_size"].iloc[0]))
        assert (run / ".hydra" / "overrides.yaml").exists()
    assert batch_sizes == [16, 64]
    first, second = (json.loads((run / "run.json").read_text()) for run in runs)
    jobs = json.loads((sweep / "sweep.json").read_text())["jobs"]  # every job, written before any ran
    assert [(j["job"], j["overrides"]) for j in jobs] == [("0", first["overrides"]), ("1", second["overrides"])]
    assert second["started_at"] <= first["finished_at"] and first["started_at"] <= second["finished_at"]  # n_jobs=2
    assert "runs 2/2 done · 0 running · 0 failed" in proc.stdout
    last_line = proc.stdout.strip().splitlines()[-1]
    assert last_line == "reports/smoke.html"
    assert (cwd / last_line).stat().st_size > 10_000 and (cwd / "reports" / "latest.html").exists()


def test_same_command_twice_gives_identical_metrics_across_processes(tmp_path):
    frames = []
    for name in ("a", "b"):
        proc = run_harness(*TINY, "batch_size=16", f"hydra.run.dir={tmp_path / name}", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        frames.append(pd.read_parquet(tmp_path / name / "metrics.parquet").drop(columns=TIMING + ["run_id"]))
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)


def test_invalid_value_anywhere_in_a_sweep_runs_nothing(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run_harness("dataset=fashion_mnist,mnist1d", "dataset.num_samples=null", "epochs=1",
                       f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 2 and not sweep.exists(), proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines() == [
        "harness: error: dataset.num_samples=None is not allowed: an integer >= 200"]


def test_failed_and_diverged_runs_are_recorded_the_others_go_on_and_the_report_is_written(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run_harness(
        "dataset=digits,fashion_mnist", "lr=1e12,0.01", "optimizer=sgd", "model=mlp", "epochs=3",
        f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path, env={"KERAS_HOME": str(tmp_path / "empty-keras")},
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    status = {}
    for num in range(4):
        record = json.loads((sweep / str(num) / "run.json").read_text())
        status[record["config"]["dataset"], record["config"]["lr"]] = record
    assert status["digits", 1e12]["status"] == "diverged"
    assert status["digits", 0.01]["status"] == "completed"
    for lr in (1e12, 0.01):
        failed = status["fashion_mnist", lr]
        assert failed["status"] == "failed" and failed["error"]["type"] == "DataUnavailable"
        assert "dataset=mnist1d" in failed["error"]["message"]
    assert "2 run(s) failed: sweep/2, sweep/3" in proc.stderr
    report = (tmp_path / proc.stdout.strip().splitlines()[-1]).read_text()
    assert "DataUnavailable" in report and "diverged" in report  # the report was still written


def test_flags_first_and_a_folder_with_its_own_clock_each_write_exactly_one_folder(tmp_path):
    sweep = tmp_path / "flags-first"
    proc = run_harness("-m", *TINY, "epochs=1", "batch_size=64", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((sweep / "0" / "run.json").read_text())["status"] == "completed"
    clocked = tmp_path / "clocked"
    proc = run_harness(*TINY, "epochs=1", f"hydra.run.dir={clocked}/r_${{now:%H-%M-%S-%f}}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [run_dir] = clocked.iterdir()  # the folder checked and locked is the one written
    assert (run_dir / "metrics.parquet").exists()
