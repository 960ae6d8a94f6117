"""Warm worker processes (harness.launch.worker, the scheduler's side; harness/worker.py, the process): CPU jobs of
a sweep run one after another in one process per slot, with exactly the metrics a fresh process gives, and a worker
that dies loses nothing but its run."""
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from harness import worker as worker_process
from harness.launch import worker as worker_module
from harness.launch.worker import Worker
from tests.conftest import PLAIN_SWEEP, REPO, run_harness
from tests.helpers.runs import NOT_COMPARED, harness_processes, record, wait_for_epochs


def test_the_worker_answers_each_job_with_its_exit_code_and_retires_when_it_should(tmp_path, monkeypatch):
    """The protocol, on jobs that need no TensorFlow: `--cfg job` prints the composed config, a bad value exits 2;
    each job's output lands in its own log; after MAX_RUNS jobs the worker takes no more."""
    monkeypatch.setattr(worker_module, "MAX_RUNS", 3)
    worker = Worker(tmp_path, {**os.environ, "PYTHONPATH": str(REPO)})
    try:
        logs = [tmp_path / f"{n}.log" for n in range(3)]
        for log, args, expected in zip(logs, (["--cfg", "job", "batch_size=8"], ["batch_size=0"],
                                              ["--cfg", "job", "batch_size=64"]), (0, 2, 0)):
            worker.send(args, log)
            deadline = time.monotonic() + 120
            while (code := worker.result()) is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert code == expected, log.read_text()
            assert worker.process.poll() is None  # the same process, still waiting for work
        assert "batch_size: 8" in logs[0].read_text() and "batch_size: 64" not in logs[0].read_text()
        assert logs[1].read_text().strip() == "harness: error: batch_size=0 is not allowed: an integer >= 1"
        assert "batch_size: 64" in logs[2].read_text()
        assert not worker.available  # three runs: retired
    finally:
        worker.close()
    assert worker.process.returncode == 0  # it ended at the end of its input


def test_a_worker_retires_once_its_memory_has_grown_by_max_growth(tmp_path, monkeypatch):
    """The worker takes job after job while its resident memory has grown by at most MAX_GROWTH since its first job
    ended; past that, no more (the next job starts a fresh process)."""
    worker = Worker(tmp_path, {**os.environ, "PYTHONPATH": str(REPO)})
    try:
        worker.send(["--cfg", "job", "batch_size=8"], tmp_path / "0.log")
        deadline = time.monotonic() + 120
        while (code := worker.result()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert code == 0
        first = worker.first_held
        assert first is not None and 0 < first < float("inf")
        assert worker.available
        held = iter([first + worker_module.MAX_GROWTH, first + worker_module.MAX_GROWTH + 1])
        monkeypatch.setattr(worker, "resident", lambda: next(held))
        assert worker.available  # grown by MAX_GROWTH exactly
        assert not worker.available and worker.process.poll() is None  # by more: alive, but it takes no more
    finally:
        worker.close()


def test_the_command_prepares_its_report_while_the_worker_interpolates(tmp_path):
    """`interpolate(..., meanwhile=f)` sends the request first, runs f in the command's process while the worker
    works (here f waits for the worker's own output in the log), then returns the worker's exit code."""
    worker = Worker(tmp_path, {**os.environ, "PYTHONPATH": str(REPO)})
    sweep, log = tmp_path / "sweep", tmp_path / "interpolation.log"
    sweep.mkdir()  # no runs: the worker's interpolation says so and exits 0
    seen = []

    def meanwhile():
        deadline = time.monotonic() + 120
        while "no pair of completed runs" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, "the worker never started the interpolation"
            time.sleep(0.05)
        seen.append(worker.process.poll())

    try:
        assert worker.interpolate(sweep, log, meanwhile=meanwhile) == 0
        assert seen == [None]  # it ran once, while the worker (still alive, waiting) had the request
    finally:
        worker.close()


def test_an_interpolation_request_runs_harness_probe_with_its_options(tmp_path, monkeypatch):
    """{"probe": SWEEP_DIR, "options": [...]} is `python -m harness.probe SWEEP_DIR OPTIONS`."""
    import gc
    import io
    import json

    seen = []
    monkeypatch.setattr(worker_process, "_run_job", lambda args, log, probe: (seen.append((args, probe)), (0, True))[1])
    requests = [{"probe": "sweeps/a", "log": str(tmp_path / "a.log")},
                {"probe": "sweeps/a", "log": str(tmp_path / "a.log"), "options": ["--include-running", "--waiting=3"]},
                {"args": ["batch_size=8"], "log": str(tmp_path / "0.log")}]
    replies = io.StringIO()
    try:
        assert worker_process.serve(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), replies) == 0
    finally:
        gc.unfreeze()  # serve froze this test process's heap after each job
    assert seen == [(["sweeps/a"], True), (["sweeps/a", "--include-running", "--waiting=3"], True),
                    (["batch_size=8"], False)]
    assert [json.loads(line) for line in replies.getvalue().splitlines()] == [{"code": 0, "reusable": True}] * 3


@pytest.mark.slow
def test_runs_in_one_warm_process_give_the_metrics_of_fresh_processes(plain_sweep, tmp_path):
    """The shared plain sweep ran its three jobs in turn in one warm worker (n_jobs=1); the same command with
    reuse_processes=false gives each its own process, and the same metrics."""
    warm_cwd, _ = plain_sweep
    warm_dir = warm_cwd / "sweeps" / "plain"
    fresh = run_harness(*PLAIN_SWEEP, "hydra.launcher.reuse_processes=false", f"hydra.sweep.dir={tmp_path / 'fresh'}",
                        "-m", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    warm_runs = [record(warm_dir / str(job)) for job in range(3)]
    fresh_runs = [record(tmp_path / "fresh" / str(job)) for job in range(3)]
    # one process ran the three jobs in turn; without reuse each had its own
    assert len({r["environment"]["pid"] for r in warm_runs}) == 1
    assert [r["environment"]["earlier_runs_in_process"] for r in warm_runs] == [0, 1, 2]  # one slot: plan order
    assert len({r["environment"]["pid"] for r in fresh_runs}) == 3
    assert all(r["environment"]["earlier_runs_in_process"] == 0 for r in fresh_runs)
    # the backend's import is paid by a process's first run: each fresh one, the warm worker's first only
    assert [r["timings"]["import"] > 0.1 for r in warm_runs] == [True, False, False]  # job 0 ran first
    assert all(r["timings"]["import"] > 0.1 for r in fresh_runs)
    for job, (w, f) in enumerate(zip(warm_runs, fresh_runs)):
        assert w["status"] == f["status"] == "completed"
        assert w["config"] == f["config"]
        assert 100 < w["peak_memory_mb"] < 4000 and w["run_seconds"] > 0
        pd.testing.assert_frame_equal(
            pd.read_parquet(warm_dir / str(job) / "metrics.parquet").drop(columns=NOT_COMPARED),
            pd.read_parquet(tmp_path / "fresh" / str(job) / "metrics.parquet").drop(columns=NOT_COMPARED),
            check_exact=True)
        for name in ("config.yaml", "overrides.yaml"):  # the warm path runs the job as the command would
            assert (warm_dir / str(job) / ".hydra" / name).read_text() == \
                (tmp_path / "fresh" / str(job) / ".hydra" / name).read_text()
        log = (warm_dir / str(job) / "train.log").read_text()
        assert f"run plain/{job}:" in log and "epoch 2 " in log  # each job's output in its own log
        assert all(f"run plain/{other}:" not in log for other in range(3) if other != job)
    assert not harness_processes(str(warm_dir))  # the worker ended with the sweep


@pytest.mark.slow
def test_a_worker_killed_mid_run_fails_that_run_the_rest_go_on_and_the_same_command_resumes_it(tmp_path):
    sweep = tmp_path / "sweep"
    command = ["dataset.num_samples=600", "probes=false", "epochs=20", "batch_size=16", "seed=0,1",
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
    assert again["epochs_completed"] == 20
    deadline = time.monotonic() + 10
    while harness_processes(str(sweep)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not harness_processes(str(sweep))


def test_between_jobs_the_worker_frees_the_jobs_cycles_and_freezes_what_survived(tmp_path, monkeypatch):
    """A job's cyclic garbage is collected once it ends (a weak reference to it is dead), and the objects that
    survived it are frozen, so Keras's gc.collect at the next run's start never walks them again."""
    import gc
    import io
    import json
    import weakref

    class Node:
        pass

    dropped, kept = [], []

    def job(args, log, probe):
        cycle, survivor = Node(), Node()
        cycle.me = cycle  # garbage only the collector frees
        dropped.append(weakref.ref(cycle))
        kept.append(survivor)
        return 0, True

    monkeypatch.setattr(worker_process, "_run_job", job)
    gc.unfreeze()
    try:
        request = json.dumps({"args": ["batch_size=8"], "log": str(tmp_path / "0.log")}) + "\n"
        assert worker_process.serve(io.StringIO(request), io.StringIO()) == 0
        assert dropped[0]() is None
        assert gc.get_freeze_count() > 0
        assert all(kept[0] is not o for o in gc.get_objects())  # frozen: out of every generation the collector walks
    finally:
        gc.unfreeze()
