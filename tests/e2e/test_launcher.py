"""The harness launcher end to end: kill -9 and resume, Ctrl-C, and the submitit path. Real processes."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.report.html import report_path
from harness.run.tensorboard_log import TAGS
from tests.conftest import REFERENCE_RUN, run_harness
from tests.helpers.board import assert_board_matches_metrics, read_board
from tests.helpers.runs import harness_processes, metrics

pytestmark = pytest.mark.slow
LONG_RUN = [arg for arg in REFERENCE_RUN if not arg.startswith("batch_size=")]  # its batch-8 run: the reference run


def start_sweep(*args, cwd, sigint_ignored=False):
    """`python -m harness ARGS` in its own session; `sigint_ignored`: started as a shell script's background job
    (`... &`) is, with SIGINT ignored, which its children inherit."""
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    return subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=ignore)


def wait_for_epochs(run_dir, epochs, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            record = json.loads((run_dir / "run.json").read_text())
            if record["epochs_completed"] >= epochs:
                return record
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"{run_dir} did not reach epoch {epochs}")


def snapshot(run_dir, names=None):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in run_dir.iterdir()
            if p.is_file() and (names is None or p.name in names)}


def test_kill_9_of_the_sweep_then_the_same_command_resumes_it(tmp_path, reference_run):
    """SIGKILL of the whole sweep (the out-of-memory killer, a lost machine): no `finally` runs, the killed run's
    files (run.json, metrics, TensorBoard events) stay as they were, and the same command resumes it."""
    sweep = tmp_path / "sweep"
    command = [*LONG_RUN, "batch_size=64,8", "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}", "-m"]
    proc = start_sweep(*command, cwd=tmp_path)
    wait_for_epochs(sweep / "1", 3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60
    while harness_processes(str(sweep)) and time.monotonic() < deadline:  # the run's process dies with the group
        time.sleep(0.1)
    assert not harness_processes(str(sweep))
    killed = json.loads((sweep / "1" / "run.json").read_text())  # nothing left to change it
    assert killed["status"] == "running" and 3 <= killed["epochs_completed"] < 15
    board = read_board(sweep / "1")  # TensorBoard's view: no `finally` ran, so no end status
    assert board.statuses == [] and len(board.series(TAGS["val_acc"])) >= 3
    assert json.loads((sweep / "0" / "run.json").read_text())["status"] == "completed"
    before = snapshot(sweep / "0")

    again = run_harness(*command, cwd=tmp_path)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "1 already done" in again.stdout
    assert snapshot(sweep / "0") == before  # the completed run was not touched
    resumed = json.loads((sweep / "1" / "run.json").read_text())
    assert resumed["status"] == "completed" and resumed["epochs_completed"] == 15
    assert resumed["resumed_from_epoch"] >= killed["epochs_completed"] - 1
    assert resumed["started_at"] == killed["started_at"] and resumed["resumed_at"]
    board = assert_board_matches_metrics(sweep / "1")  # one value per step across both attempts, one end status
    assert list(board.series(TAGS["val_acc"])) == list(range(1, 16)) and board.statuses == ["STATUS_SUCCESS"]

    pd.testing.assert_frame_equal(metrics(sweep / "1"), metrics(reference_run), check_exact=True)


def test_ctrl_c_stops_the_runs_cleanly_and_marks_them_interrupted(tmp_path):
    sweep = tmp_path / "sweep"
    # far more epochs than the test waits for: both runs are still going when Ctrl-C arrives
    # started with SIGINT ignored, as from a script's `&`: the harness still stops on it, and so do its runs
    proc = start_sweep("dataset.num_samples=1000", "epochs=500", "batch_size=8,16", "seed=0", "hydra.launcher.n_jobs=2",
                       f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path, sigint_ignored=True)
    wait_for_epochs(sweep / "0", 2)
    proc.send_signal(signal.SIGINT)  # the launcher only; it forwards to its runs
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output[-3000:]
    for num in (0, 1):
        record = json.loads((sweep / str(num) / "run.json").read_text())
        assert record["status"] == "interrupted" and record["finished_at"], {
            key: record.get(key) for key in ("run_id", "status", "error", "epochs_completed", "finished_at")}
    assert f"resume with: python -m harness.resume {sweep}" in output
    assert output.strip().splitlines()[-1] == str(report_path(sweep, Path("reports")))  # a partial report


def test_submitit_local_runs_write_the_same_files_and_resume_the_same_way(tmp_path):
    sweep = tmp_path / "sweep"
    command = ["+study=smoke", "probes=false", "hydra/launcher=submitit_local", f"hydra.sweep.dir={sweep}", "-m"]
    proc = run_harness(*command, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for num in (0, 1):
        record = json.loads((sweep / str(num) / "run.json").read_text())
        assert record["status"] == "completed" and record["run_id"] == f"sweep/{num}"
        assert len(pd.read_parquet(sweep / str(num) / "metrics.parquet")) == 2
    # Hydra itself rewrites .hydra/ and logs to train.log before the job can skip; the results stay as they were
    results = ("metrics.parquet", "run.json")
    before = {num: snapshot(sweep / str(num), results) for num in (0, 1)}
    again = run_harness(*command, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert {num: snapshot(sweep / str(num), results) for num in (0, 1)} == before
    assert "already completed: left as it is" in (sweep / "0" / "train.log").read_text()
    assert again.stdout.strip().splitlines()[-1] == str(report_path(sweep, Path("reports")))


def test_a_sweep_folder_holding_another_sweep_is_refused(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / "0").mkdir(parents=True)
    (sweep / "0" / "run.json").write_text(json.dumps({"status": "completed", "overrides": ["batch_size=64"]}))
    proc = run_harness("batch_size=32,64", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "hydra.sweep.dir=" in proc.stderr and "ran 'batch_size=64'" in proc.stderr
