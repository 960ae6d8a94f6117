"""tracking=mlflow end to end, checked with MLflow's own client: a sweep logged as it trains to the default SQLite
store (runs at once), a run killed -9 and resumed (one value per step, the same MLflow run), a real `mlflow server`
stopped mid-sweep (every run completes, the warning names `python -m harness.track`, which fills the gap), runs that
log themselves into one store at once (no "database is locked"), and MLflow loaded only when tracking is on."""
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import suppress

import pytest

from tests.conftest import TINY, run_harness
from tests.helpers.runs import frozen, record, wait_for_epochs
from tests.helpers.tracking import Server, assert_run_matches_files, client, histories, sweep_runs

pytestmark = pytest.mark.slow
# printed last by a run's process: MLflow's modules it loaded (the first three)
MODULES = "import sys; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'mlflow')[:3]))"


def test_a_sweep_logs_live_to_the_default_sqlite_store_with_its_report_on_the_parent_run(tmp_path):
    sweep = tmp_path / "sweeps" / "live"
    done = run_harness(*TINY, "epochs=3", "batch_size=16,32,64", "hydra.launcher.n_jobs=3", "tracking=mlflow",
                       f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warning" not in done.stderr and "locked" not in done.stdout + done.stderr
    uri = f"sqlite:///{tmp_path / 'sweeps' / 'mlflow.db'}"
    parent, runs = sweep_runs(uri, sweep)
    assert sorted(runs) == ["0", "1", "2"] and parent.info.status == "FINISHED"
    assert client(uri).get_experiment(parent.info.experiment_id).name == "live"
    for job, run in runs.items():
        assert run.info.status == "FINISHED" and run.data.tags["harness.status"] == "completed"
        assert_run_matches_files(uri, run, sweep / job)
        assert "locked" not in (sweep / job / "train.log").read_text()
        assert not record(sweep / job)["tracking"].get("error")
    artifacts = {a.path for a in client(uri).list_artifacts(parent.info.run_id)}
    report = done.stdout.strip().splitlines()[-1]  # the report's path stays the last line printed
    assert artifacts == {"sweep.json", "results.csv", report.split("/")[-1]}
    assert (tmp_path / "sweeps" / "mlartifacts").is_dir() and not (tmp_path / "mlruns").exists()


def test_kill_9_then_the_same_command_continues_the_same_mlflow_run_one_value_per_step(tmp_path):
    """A run that logs itself (a single run: harness.tracking.live), killed -9 mid-training: its run.json names its
    MLflow run from the start, the same command continues that run, and every epoch is there once."""
    run_dir = tmp_path / "sweeps" / "killed" / "0"
    command = ["dataset.num_samples=1000", "epochs=12", "seed=0", "probes=false", "batch_size=8",
               "tracking=mlflow", f"hydra.run.dir={run_dir}"]
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    wait_for_epochs(run_dir, 3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = record(run_dir)
    assert killed["status"] == "running" and killed["epochs_completed"] < 12
    uri = f"sqlite:///{tmp_path / 'sweeps' / 'mlflow.db'}"
    first = killed["tracking"]["run_id"]
    assert client(uri).get_run(first).info.status == "RUNNING"  # no `finally` ran
    assert 1 <= len(histories(uri, first, ["epoch"])["epoch"]) <= killed["epochs_completed"]

    again = run_harness(*command, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    done = record(run_dir)
    assert done["tracking"]["run_id"] == first and done["resumed_from_epoch"] >= 2
    run = client(uri).get_run(first)
    assert run.info.status == "FINISHED"
    assert_run_matches_files(uri, run, run_dir)  # every epoch once, those of both attempts
    assert [step for step, _ in histories(uri, first, ["epoch"])["epoch"]] == list(range(1, 13))


def test_a_server_stopped_mid_sweep_costs_no_run_and_harness_track_fills_the_gap(tmp_path):
    server = Server(tmp_path).start()
    sweep = tmp_path / "sweeps" / "served"
    command = ["dataset.num_samples=1000", "epochs=8", "seed=0", "probes=false", "batch_size=64,8",
               "hydra.launcher.n_jobs=1", "tracking=mlflow", f"tracking.uri={server.uri}", "tracking.experiment=lab",
               f"hydra.sweep.dir={sweep}", "-m"]
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=tmp_path, text=True,
                                stdout=subprocess.PIPE, stderr=stderr)
    try:
        wait_for_epochs(sweep / "1", 2)
        worker = record(sweep / "1")["environment"]["pid"]
        with frozen(worker):  # run 1 held mid-way while the tracker, at its own pace, logs run 0 whole
            wait_for_finished(server.uri, sweep, "0")
            server.stop()
            stopped_at = record(sweep / "1")["epochs_completed"]
        wait_for_epochs(sweep / "1", stopped_at + 2)  # an epoch checkpointed after the stop, for the tracker to log
        with frozen(worker):  # held until the tracker has failed on it, while run 1 trains
            wait_for_text(errors, "failed while the runs trained")
        out, _ = proc.communicate(timeout=300)
    finally:
        proc.kill()
        server.stop()
    err = errors.read_text()
    assert proc.returncode == 0, err[-3000:]
    assert [record(sweep / job)["status"] for job in "01"] == ["completed", "completed"]
    warnings = [line for line in err.splitlines() if line.startswith("harness: warning: tracking")]
    assert "failed while the runs trained (cannot connect" in warnings[0], err[-3000:]  # then once more, at the end:
    assert len(warnings) == 2 and f"once it answers, log it with: python -m harness.track {sweep}" in warnings[1]

    server.start()
    tracked = subprocess.run([sys.executable, "-m", "harness.track", str(sweep)], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300)
    assert tracked.returncode == 0, tracked.stderr[-3000:]
    assert "1 of 2 run(s) logged from their files" in tracked.stdout
    try:
        parent, runs = sweep_runs(server.uri, sweep)
        assert client(server.uri).get_experiment(parent.info.experiment_id).name == "lab"
        for job in "01":
            assert runs[job].info.status == "FINISHED"
            assert_run_matches_files(server.uri, runs[job], sweep / job)
            assert [a.path for a in client(server.uri).list_artifacts(runs[job].info.run_id)] == ["run.json"]
        assert parent.info.status == "FINISHED"
        assert "results.csv" in {a.path for a in client(server.uri).list_artifacts(parent.info.run_id)}
    finally:
        server.stop()


def wait_for_finished(uri: str, sweep, job: str, timeout: float = 240) -> None:
    """Until MLflow holds the job's run as FINISHED: its every epoch and its status logged."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with suppress(Exception):  # the parent run or the job's run not created yet
            if sweep_runs(uri, sweep)[1][job].info.status == "FINISHED":
                return
        time.sleep(0.5)
    raise AssertionError(f"MLflow never held job {job} of {sweep} as FINISHED")


def wait_for_text(path, text: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text():
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} never said {text!r}: {path.read_text()[-3000:]}")


def test_runs_that_log_themselves_at_once_share_the_sqlite_store(tmp_path):
    """Runs a launcher of the harness's does not drive log themselves (harness.tracking.live): two at once into one
    SQLite store, no "database is locked"."""
    procs = []
    for name, batch in (("a", 8), ("b", 16)):  # single runs: no sweep around them, each logs itself, no parent
        args = [*TINY, "epochs=4", f"batch_size={batch}", "tracking=mlflow",
                f"hydra.run.dir={tmp_path / 'sweeps' / name / '0'}"]
        code = f"import json; from harness.launch.cli import main; code = main({args!r}); {MODULES}; sys.exit(code)"
        procs.append(subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    outputs = [proc.communicate(timeout=300) for proc in procs]
    uri = f"sqlite:///{tmp_path / 'sweeps' / 'mlflow.db'}"
    for proc, (out, err), name in zip(procs, outputs, "ab"):
        assert proc.returncode == 0 and "warning" not in err, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])  # MLflow loaded: tracking is on
        run_dir = tmp_path / "sweeps" / name / "0"
        run = client(uri).get_run(record(run_dir)["tracking"]["run_id"])
        assert run.info.status == "FINISHED" and "mlflow.parentRunId" not in run.data.tags
        assert client(uri).get_experiment(run.info.experiment_id).name == name
        assert_run_matches_files(uri, run, run_dir)


def test_mlflow_is_not_loaded_when_tracking_is_off(tmp_path):
    run_dir = tmp_path / "sweeps" / "one" / "0"
    code = (f"import json; from harness.launch.cli import main; code = main({[*TINY, f'hydra.run.dir={run_dir}']!r}); "
            f"{MODULES}; sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [] and "tracking" not in record(run_dir)
