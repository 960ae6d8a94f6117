"""Warm worker processes (harness.worker): CPU jobs of a sweep run one after another in one process per slot,
with exactly the metrics a fresh process gives, and a worker that dies loses nothing but its run."""
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.conftest import TINY, run_harness
from tests.test_faults import NOT_COMPARED, harness_processes, record, wait_for_epochs

pytestmark = pytest.mark.slow


def test_runs_in_one_warm_process_give_the_metrics_of_fresh_processes(tmp_path):
    command = [*TINY, "batch_size=16,64,32", "hydra.launcher.n_jobs=1"]
    warm = run_harness(*command, f"hydra.sweep.dir={tmp_path / 'warm'}", "-m", cwd=tmp_path)
    assert warm.returncode == 0, warm.stderr[-3000:]
    fresh = run_harness(*command, "hydra.launcher.reuse_processes=false", f"hydra.sweep.dir={tmp_path / 'fresh'}",
                        "-m", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    warm_runs = [record(tmp_path / "warm" / str(job)) for job in range(3)]
    fresh_runs = [record(tmp_path / "fresh" / str(job)) for job in range(3)]
    # one process ran the three jobs in turn; without reuse each had its own
    assert len({r["environment"]["pid"] for r in warm_runs}) == 1
    assert [r["environment"]["earlier_runs_in_process"] for r in warm_runs] == [0, 1, 2]
    assert len({r["environment"]["pid"] for r in fresh_runs}) == 3
    assert all(r["environment"]["earlier_runs_in_process"] == 0 for r in fresh_runs)
    for job, (w, f) in enumerate(zip(warm_runs, fresh_runs)):
        assert w["status"] == f["status"] == "completed"
        assert w["config"] == f["config"]
        assert 100 < w["peak_memory_mb"] < 4000 and w["run_seconds"] > 0
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "warm" / str(job) / "metrics.parquet").drop(columns=NOT_COMPARED),
            pd.read_parquet(tmp_path / "fresh" / str(job) / "metrics.parquet").drop(columns=NOT_COMPARED),
            check_exact=True)
        log = (tmp_path / "warm" / str(job) / "train.log").read_text()
        assert f"run warm/{job}:" in log and "epoch 2 " in log  # each job's output in its own log
        assert all(f"run warm/{other}:" not in log for other in range(3) if other != job)
    assert not harness_processes(str(tmp_path / "warm"))  # the worker ended with the sweep


def test_a_worker_killed_mid_run_fails_that_run_the_rest_go_on_and_the_same_command_resumes_it(tmp_path):
    sweep = tmp_path / "sweep"
    command = ["dataset.num_samples=600", "probes=false", "epochs=60", "batch_size=16", "seed=0,1",
               "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}", "-m"]
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_epochs(sweep / "0", 2)
    worker = record(sweep / "0")["environment"]["pid"]
    os.kill(worker, signal.SIGKILL)  # the out-of-memory killer
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-3000:]
    killed, other = record(sweep / "0"), record(sweep / "1")
    assert killed["status"] == "failed" and "exited with code -9" in killed["error"]["message"]
    assert other["status"] == "completed" and other["environment"]["pid"] != worker  # a new worker took over
    assert other["environment"]["earlier_runs_in_process"] == 0
    resumed = run_harness(*command, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    again = record(sweep / "0")
    assert again["status"] == "completed" and again["resumed_from_epoch"] >= 1
    assert again["epochs_completed"] == 60
    deadline = time.monotonic() + 10
    while harness_processes(str(sweep)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not harness_processes(str(sweep))
