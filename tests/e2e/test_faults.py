"""Faults of the real world, each caused as a user would meet it: SIGTERM mid-sweep, damaged files, a full disk,
a read-only folder. Nothing is lost, nothing crashes, the same command resumes."""
import json
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

import pandas as pd
import pytest

from tests import conftest
from tests.conftest import PLAIN_SWEEP, REFERENCE_RUN, REPO, copy_sweep, run_harness
from tests.helpers.runs import frozen, harness_processes, metrics, record, wait_for_epochs, wait_for_signal
from tests.helpers.tracking import assert_run_matches_files, sweep_runs

pytestmark = pytest.mark.slow
TINY = ["dataset.num_samples=600", "seed=0", "probe_samples=64"]  # probes on, their end-of-run part small


@contextmanager
def frozen_mid_run(tmp_path, run: list[str], epochs: int, attempts: int = 3):
    """Within: (the command's process, its run's process, frozen, and the sweep folder), the run frozen between its
    second and its last epoch. Its remaining epochs take under a second, so a test process that a loaded machine
    holds up longer than that finds the run done once frozen: the frozen run's own files say so (nothing else
    writes them), and the command starts again in a new folder."""
    for attempt in range(attempts):
        sweep = tmp_path / f"sweep-{attempt}"
        proc = subprocess.Popen([sys.executable, "-m", "harness", *run, f"hydra.sweep.dir={sweep}", "-m"],
                                cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for_epochs(sweep / "0", 2)
        worker = record(sweep / "0")["environment"]["pid"]
        held = ExitStack()
        try:
            held.enter_context(frozen(worker))
        except ProcessLookupError:  # its process had ended already
            proc.communicate(timeout=300)
            continue
        with held:
            now = record(sweep / "0")
            if now["status"] == "running" and now["epochs_completed"] < epochs:
                yield proc, worker, sweep
                return
        proc.communicate(timeout=300)
    raise AssertionError(f"the run finished before it could be frozen, {attempts} times")


def test_sigterm_mid_sweep_records_interrupted_writes_a_report_and_the_same_command_resumes(tmp_path, reference_run):
    run = REFERENCE_RUN  # a sweep of one run: the reference run's
    with frozen_mid_run(tmp_path, run, epochs=15) as (proc, worker, sweep):  # it waits until the signal is forwarded
        proc.send_signal(signal.SIGTERM)  # what SLURM's preemption, scancel and `timeout` send
        wait_for_signal(worker, signal.SIGINT)
    command = [*run, f"hydra.sweep.dir={sweep}", "-m"]
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-3000:]
    assert "interrupted (SIGTERM); resume with: python -m harness.resume " in err
    interrupted = record(sweep / "0")
    assert interrupted["status"] == "interrupted" and 2 <= interrupted["epochs_completed"] < 15
    assert (tmp_path / out.strip().splitlines()[-1]).exists()  # the partial report
    assert not harness_processes(str(sweep))  # no orphaned run process
    resumed = run_harness(*command, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    done = record(sweep / "0")
    # the checkpoint follows the epoch's metrics row: a signal between the two resumes one epoch earlier
    assert done["status"] == "completed"
    assert done["resumed_from_epoch"] in (interrupted["epochs_completed"], interrupted["epochs_completed"] - 1)
    pd.testing.assert_frame_equal(metrics(sweep / "0"), metrics(reference_run), check_exact=True)


STRESS = [*TINY, "batch_size=16,32", "epochs=5"]  # two runs at once, the probes and the report at the end


TRIES = 12  # commands started, each sent SIGTERM at a random moment unless it ended before it
EARLIEST, LATEST = 0.3, 6.0  # seconds after a command's start: its import, planning, compiles, epochs, probes, report
# at least this many delivered, exits 143 and runs found interrupted after a command (measured here, nothing else
# running: 12, 11 and 24 of 12 commands, 70 s; 18 commands had measured 18, 16 and 36, 30 drawn independently
# 29, 24 and 50)
SENT_FLOOR, EXIT_FLOOR, INTERRUPTED_FLOOR = 8, 5, 4


def moments(tries: int, seed: int) -> list[float]:
    """`tries` delays, one drawn in each of as many equal slices of [EARLIEST, LATEST], the slices in a random
    order: every part of a command's first seconds is hit, which as many independent draws leave to chance."""
    draw, width = random.Random(seed), (LATEST - EARLIEST) / tries
    return [EARLIEST + width * (k + draw.random()) for k in draw.sample(range(tries), tries)]


def test_sigterms_at_random_moments_each_leave_interrupted_runs_that_resume_to_an_uninterrupted_sweep(tmp_path):
    """SIGTERM (what SLURM's preemption, scancel and `timeout` send) to 12 commands, each after a delay from the
    command's start spread over its first seconds (`moments`), so that it lands in Python's and TensorFlow's import,
    a compile, an epoch, a checkpoint, the end-of-run probes or the report: each time the command exits 143 (0
    where it had finished; killed by the signal where it came before Python had set the handlers, with nothing
    run), every run it had started and not ended is `interrupted` (never failed, never left running) and no process
    of it is left; the next command, the one it names (`python -m harness.resume`; the same command where it
    stopped before it had planned), goes on. Each sweep that completes has the metrics of the same sweep run
    without a signal, and a new sweep takes the next signals. The delays are drawn from a fixed seed; what they hit
    depends on the machine, and every outcome is held to the same rules (it found a SIGTERM during the command's
    own composition of its jobs that exited 1 with a traceback)."""
    reference = tmp_path / "reference"
    done = run_harness(*STRESS, f"hydra.sweep.dir={reference}", "-m", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    delays, tries, sweeps, completed = moments(TRIES, seed=80), 0, 0, []
    sent, exits, interrupted = 0, [], 0  # signals delivered, the commands' exit codes, runs recorded interrupted
    while tries < TRIES:
        sweep = tmp_path / f"sweep-{sweeps}"
        command = [sys.executable, "-m", "harness", *STRESS, f"hydra.sweep.dir={sweep}", "-m"]
        while tries < TRIES:
            proc = subprocess.Popen(command, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:  # a command that ends before its moment has nothing left to stop: the next one starts at once
                _, err = proc.communicate(timeout=delays[tries])
            except subprocess.TimeoutExpired:  # still running at its moment (its output so far is kept)
                proc.send_signal(signal.SIGTERM)
                sent += 1
                _, err = proc.communicate(timeout=180)
            tries += 1
            exits.append(proc.returncode)
            # 143: the handlers ran; -15: the signal came before they were set (Python's start), nothing had run
            assert proc.returncode in (0, 143, -signal.SIGTERM), err[-3000:]
            statuses = [record(run)["status"] for run in sorted(sweep.glob("[0-9]*")) if (run / "run.json").exists()]
            assert set(statuses) <= {"completed", "interrupted"}, (statuses, err[-3000:])
            interrupted += statuses.count("interrupted")
            assert not harness_processes(str(sweep)), err[-3000:]  # no run process left behind
            if proc.returncode == 0 and statuses == ["completed", "completed"]:
                break
            if "resume with: " in err:  # else it was stopped before it planned: run the command again, as it says
                command = [sys.executable, "-m", "harness.resume", str(sweep)]
        else:  # the last signal: the last sweep is resumed to its end without one
            finished = subprocess.run([sys.executable, "-m", "harness.resume", str(sweep)], cwd=tmp_path,
                                      capture_output=True, text=True, timeout=300)
            assert finished.returncode == 0, finished.stderr[-3000:]
        for job in ("0", "1"):
            assert record(sweep / job)["status"] == "completed"
            pd.testing.assert_frame_equal(metrics(sweep / job), metrics(reference / job), check_exact=True)
        completed.append(sweep)
        sweeps += 1
    # what was stressed, counted, not assumed: most tries delivered a signal, many stopped a command mid-way (143)
    # and left runs recorded interrupted, which the next command resumed
    assert completed and sent >= SENT_FLOOR and exits.count(143) >= EXIT_FLOOR and interrupted >= INTERRUPTED_FLOOR, \
        (sent, exits, interrupted)


def test_sigterm_to_a_single_run_records_it_interrupted(tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "harness", *TINY, "epochs=30", f"hydra.run.dir={run_dir}"],
                            cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_epochs(run_dir, 1)
    # the checkpoint follows the epoch's metrics row: wait for it, or a signal between the two leaves none yet
    deadline = time.monotonic() + 120
    while not (run_dir / "checkpoint.npz").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 143
    assert record(run_dir)["status"] == "interrupted" and (run_dir / "checkpoint.npz").exists()


def test_damaged_checkpoint_parquet_and_run_json_are_run_again_and_the_report_lists_them(plain_sweep, tmp_path):
    sweep = copy_sweep(plain_sweep[0] / "sweeps" / "plain", tmp_path / "sweep")  # three completed runs
    command = [*PLAIN_SWEEP, f"hydra.sweep.dir={sweep}", "-m"]
    # run 0: killed mid-epoch, then its checkpoint and metrics truncated (a crash during a copy, a full disk)
    killed = record(sweep / "0") | {"status": "running"}
    (sweep / "0" / "run.json").write_text(json.dumps(killed))
    table = (sweep / "0" / "metrics.parquet").read_bytes()
    (sweep / "0" / "metrics.parquet").write_bytes(table[: len(table) // 2])
    (sweep / "0" / "checkpoint.npz").write_bytes(b"PK\x03\x04 cut short")
    (sweep / "1" / "run.json").write_text('{"run_id": "sweep/1", "stat')  # run 1: garbage run.json
    intact = (sweep / "2" / "metrics.parquet").stat().st_mtime_ns

    report = subprocess.run([sys.executable, "-m", "harness.report", str(sweep), "--out", str(tmp_path / "r")],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr[-3000:]
    html = Path(report.stdout.strip().splitlines()[-1]).read_text()
    assert "2 run(s) damaged" in html and "cannot be read" in html

    resumed = run_harness(*command, cwd=tmp_path)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr[-3000:]
    for job in ("0", "1"):
        again = record(sweep / job)
        assert again["status"] == "completed" and again["resumed_from_epoch"] is None
        assert "the run started again from epoch 0" in again["notes"][0]
        assert metrics(sweep / job)["epoch"].tolist() == [1, 2]  # the stale rows are gone
    assert (sweep / "2" / "metrics.parquet").stat().st_mtime_ns == intact  # an intact run is never touched


def _tmpfs(path: Path, size: str) -> None:
    """A small tmpfs at `path` (root only); skips, with the reason, where it cannot be mounted."""
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a tmpfs needs root (CI runs as root)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    _tmpfs(disk, "4m")  # two tiny runs: checkpoints, kept weights (probes) and their atomic rewrites
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_is_one_line_per_run_no_crash_no_temp_files_and_the_same_command_resumes(tmp_path, small_disk):
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (4 * 1024 * 1024 - 60 * 1024))  # 60 KB left: run.json fits, the metrics do not
    # two runs of one batch size: no pair to interpolate, whose process adds nothing to what a full disk tests
    command = [*(o for o in TINY if not o.startswith("seed=")), "epochs=2", "batch_size=16", "seed=0,1",
               "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={small_disk / 'sweep'}", "-m"]
    full = run_harness(*command, cwd=tmp_path)
    assert full.returncode == 1 and "Traceback" not in full.stdout + full.stderr, full.stderr[-3000:]
    assert "No space left on device" in full.stdout + full.stderr
    assert not list(small_disk.rglob("*.tmp"))  # nothing half-written left behind
    filler.unlink()
    freed = run_harness(*command, cwd=tmp_path)
    assert freed.returncode == 0, freed.stderr[-3000:]
    assert [record(small_disk / "sweep" / j)["status"] for j in ("0", "1")] == ["completed", "completed"]


def test_a_read_only_sweep_folder_is_one_line_and_exit_1(plain_sweep, tmp_path, small_disk):
    sweep = copy_sweep(plain_sweep[0] / "sweeps" / "plain", small_disk / "sweep")  # a finished sweep on the disk
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    more = [*conftest.TINY, "batch_size=16,64,32,8", "hydra.launcher.n_jobs=1"]  # one run more than the shared sweep
    refused = run_harness(*more, f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert refused.returncode == 1, refused.stderr[-3000:]
    assert refused.stderr.strip().splitlines()[-1].endswith("Read-only file system")
    assert "Traceback" not in refused.stderr


def test_a_requeue_by_submitit_records_interrupted_not_failed(tmp_path, compose, monkeypatch):
    """submitit's handler for SLURM's pre-timeout signal requeues the job by raising SystemExit in the run."""
    from harness.run import train
    from harness.run.experiment import run_experiment

    original = train.EpochRecorder.on_epoch_end

    def requeue_after_first_epoch(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 0:
            raise SystemExit(-1)

    monkeypatch.setattr(train.EpochRecorder, "on_epoch_end", requeue_after_first_epoch)
    with pytest.raises(SystemExit):
        run_experiment(compose(*TINY, "epochs=3", "batch_size=32"), tmp_path / "run", run_id="s/0")
    requeued = record(tmp_path / "run")
    assert requeued["status"] == "interrupted" and requeued["error"]["type"] == "SystemExit"




def test_a_run_whose_slurm_requeues_run_out_records_interrupted_and_keeps_its_earlier_notes(tmp_path, compose,
                                                                                           monkeypatch):
    """After hydra.launcher.max_num_timeout requeues, submitit's handler for the next time-limit warning raises
    UncompletedJobError inside the run: the run did not fail, it did not finish. Its earlier attempt's note stays."""
    from submitit.core.utils import UncompletedJobError

    from harness.run import slurm, train
    from harness.run.experiment import run_experiment

    monkeypatch.setenv("SLURM_JOB_ID", "7")
    original = train.EpochRecorder.on_epoch_end
    signal_with = {"error": SystemExit(-1)}  # the first attempt is requeued, the second is out of requeues

    def time_limit_in_the_second_epoch(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 1:  # the first epoch is checkpointed
            raise signal_with["error"]

    monkeypatch.setattr(train.EpochRecorder, "on_epoch_end", time_limit_in_the_second_epoch)
    cfg = compose(*TINY, "epochs=4", "batch_size=32")
    with pytest.raises(SystemExit):
        run_experiment(cfg, tmp_path / "run", run_id="s/0")
    signal_with["error"] = UncompletedJobError("Job not requeued because: timed-out too many times.")
    with pytest.raises(UncompletedJobError):
        run_experiment(cfg, tmp_path / "run", run_id="s/0")
    out = record(tmp_path / "run")
    assert out["status"] == "interrupted" and out["error"]["type"] == "UncompletedJobError", out
    assert out["resumed_from_epoch"] == 1  # the second attempt went on from the first's checkpoint
    assert out["notes"] == [slurm.REQUEUED, slurm.OUT_OF_REQUEUES]
    assert "hydra.launcher.max_num_timeout" in slurm.OUT_OF_REQUEUES
    monkeypatch.delenv("SLURM_JOB_ID")  # off SLURM the same error is the run's failure
    assert not slurm.out_of_requeues(UncompletedJobError("Job not requeued because: timed-out too many times."))


SLURM = ["hydra/launcher=slurm", "hydra.launcher.partition=debug", "hydra.launcher.cpus_per_task=1",
         "hydra.launcher.mem_gb=2"]  # one run per job on the local node


@pytest.fixture(scope="session")
def slurm_cluster():
    """A real one-node SLURM (scripts/slurm_local.sh), started once for the test run (the SLURM tests share one
    pytest-xdist worker) and stopped after the last; skipped where it cannot run (not root, no packages)."""
    import fcntl

    script = REPO / "scripts" / "slurm_local.sh"
    # one cluster on the machine: a lock, not only xdist's grouping, keeps two test runs' start and stop apart (a CI
    # run once had one test's stop take the controller from under the other's sbatch)
    with open(Path(os.environ.get("SLURM_LOCAL_STATE", "/tmp/harness-slurm")).with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=600)
        if started.returncode == 3:
            pytest.skip(started.stderr.strip())
        assert started.returncode == 0, started.stderr
        yield
        subprocess.run(["bash", str(script), "stop"], capture_output=True, timeout=60)


@pytest.fixture
def local_slurm(slurm_cluster):
    """The shared cluster with its queue empty: the jobs an earlier test cancelled have left it."""
    deadline = time.monotonic() + 120
    while (queued := subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip()):
        if time.monotonic() > deadline:
            pytest.fail(f"the local SLURM's queue did not empty:\n{queued}")
        time.sleep(0.5)
    yield


def _stop_job(proc: subprocess.Popen, sweep: Path) -> None:
    """Cancel the sweep's SLURM jobs and wait until none of its processes is left (a job's run ignores SIGTERM,
    submitit's, so it is killed), so it takes no core from the tests after it."""
    jobs = subprocess.run(["squeue", "-h", "-o", "%A"], capture_output=True, text=True).stdout.split()
    for job in jobs:
        subprocess.run(["scancel", "--signal=KILL", "--full", job])
        subprocess.run(["scancel", job])
    proc.kill()
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while harness_processes(str(sweep)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in harness_processes(str(sweep)):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.xdist_group("slurm")  # one local SLURM: the SLURM tests take turns on one worker
def test_a_slurm_time_limit_records_interrupted_requeues_and_resumes_to_the_same_metrics(tmp_path, local_slurm,
                                                                                       request):
    """On a real one-node SLURM (scripts/slurm_local.sh): submitit asks for SIGUSR2 15 s before a 1-minute limit,
    requeues the job, and the run resumes from its last epoch and trains on. slurm_local.sh sets cred_expire=10 s,
    the wait of a requeued job before it starts again (SLURM's default is 120 s), and the scheduler's passes to
    every 2 s. The run is far longer than an attempt on any machine (300 epochs): the test watches the first
    attempt end in `interrupted`, a requeued one resume and train an epoch more, then cancels the job, and its
    epochs must equal the first epochs of the same run uninterrupted, which trains meanwhile (not the shared
    reference run: how many epochs the attempts reach is known only once they have). Both are frozen while they
    wait, so they take no core from the other tests: the first attempt once it has an epoch, until SLURM's signal
    is pending, and the uninterrupted run once it has two, until the attempts are done."""
    sweep = tmp_path / "sweep"
    run = ["dataset.num_samples=5000", "batch_size=16", "seed=0", "probes=false"]  # 4000 samples: ~1 s an epoch
    # the signal 45 s into each attempt: a requeued attempt's start-up takes up to ~28 s on a loaded machine and
    # must leave it time to train an epoch before its own signal
    command = [*SLURM, "hydra.launcher.timeout_min=1", "hydra.launcher.signal_delay_s=15",
               "hydra.launcher.max_num_timeout=5", *run, "epochs=300", f"hydra.sweep.dir={sweep}", "-m"]
    statuses: list[tuple[float, str]] = []  # (when, status) each time the run's status changes: for a failure
    straight = subprocess.Popen([sys.executable, "-m", "harness", *run, "epochs=300",
                                 f"hydra.run.dir={tmp_path / 'straight'}"],
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    request.addfinalizer(straight.kill)  # frozen for most of the test: never left behind, whatever fails
    log = open(tmp_path / "command.log", "w")  # not a pipe: submitit's polling would fill it and block
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=tmp_path, text=True,
                            stdout=log, stderr=subprocess.STDOUT)
    resumed = None
    try:
        wait_for_epochs(tmp_path / "straight", 2)
        os.kill(straight.pid, signal.SIGSTOP)  # continued once the attempts are done
        wait_for_epochs(sweep / "0", 1)
        first = record(sweep / "0")
        statuses.append((time.monotonic(), first["status"]))
        with frozen(first["environment"]["pid"]):  # no epochs meanwhile: SLURM's signal waits for it, 45 s in
            _wait_for_signal_or_status(sweep / "0", first["environment"]["pid"], signal.SIGUSR2)
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:  # every status between the attempts
            try:
                now = record(sweep / "0")
                if not statuses or statuses[-1][1] != now["status"]:
                    statuses.append((time.monotonic(), now["status"]))
                if now.get("resumed_from_epoch") and now["epochs_completed"] >= now["resumed_from_epoch"] + 1:
                    resumed, attempts = now, metrics(sweep / "0")  # the epochs so far (written atomically)
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
    finally:
        _stop_job(proc, sweep)
        log.close()
    if resumed is None:
        controller = Path(os.environ.get("SLURM_LOCAL_STATE", "/tmp/harness-slurm")) / "slurmctld.log"
        straight.kill()
        pytest.fail(f"no resumed attempt after 300 s; statuses {statuses}; slurmctld.log ends:\n"
                    + (controller.read_text()[-3000:] if controller.exists() else "(none)"))
    seen = [status for _, status in statuses]
    assert seen[:3] == ["running", "interrupted", "running"], statuses
    assert "Requeued job" in (sweep / "0" / "train.log").read_text()
    assert len(attempts) >= resumed["resumed_from_epoch"] + 1
    os.kill(straight.pid, signal.SIGCONT)
    deadline = time.monotonic() + 300  # the uninterrupted run, as far as the interrupted one came
    while straight.poll() is None and time.monotonic() < deadline:
        try:
            if len(pd.read_parquet(tmp_path / "straight" / "metrics.parquet")) >= len(attempts):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    straight.kill()
    straight.wait()
    pd.testing.assert_frame_equal(attempts, metrics(tmp_path / "straight").iloc[:len(attempts)], check_exact=True)


def _wait_for_signal_or_status(run_dir: Path, pid: int, signum: int, timeout: float = 180) -> None:
    """Until the frozen run has `signum` pending, or its status has changed: a signal that reached it before it
    stopped was handled, and it recorded that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if record(run_dir)["status"] != "running":
            return
        with suppress(AssertionError):
            wait_for_signal(pid, signum, timeout=0.5)
            return
    raise AssertionError(f"run {run_dir} was never sent {signal.Signals(signum).name}")


@pytest.mark.slow
@pytest.mark.xdist_group("slurm")
def test_a_slurm_preemption_records_interrupted_the_moment_its_sigterm_arrives(tmp_path, local_slurm):
    """SLURM preempts (or cancels) a job with SIGTERM, which submitit lets pass while the job runs on until SLURM
    kills it: run.json must say `interrupted`, awaiting requeue, while the job is still running, not `running`."""
    from harness.run.slurm import PREEMPTED

    sweep = tmp_path / "sweep"
    command = [*SLURM, "hydra.launcher.timeout_min=5", "dataset.num_samples=5000", "epochs=40", "batch_size=16",
               "seed=0", "probes=false", f"hydra.sweep.dir={sweep}", "-m"]
    log = open(tmp_path / "command.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=tmp_path, text=True, stdout=log,
                            stderr=subprocess.STDOUT)
    job = None
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if record(sweep / "0")["epochs_completed"] >= 1:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        assert proc.poll() is None, (tmp_path / "command.log").read_text()[-3000:]
        job = subprocess.run(["squeue", "-h", "-o", "%A"], capture_output=True, text=True).stdout.split()[0]
        assert subprocess.run(["scancel", "--signal=TERM", job]).returncode == 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and record(sweep / "0")["status"] != "interrupted":
            time.sleep(0.1)
        state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout
        done = record(sweep / "0")
        assert done["status"] == "interrupted" and PREEMPTED in done["notes"], done
        assert state.strip() == "RUNNING", state  # recorded while SLURM still runs the job
    finally:
        _stop_job(proc, sweep)
        log.close()


def _submitted_tasks(sweep: Path) -> dict[str, set[int]]:
    """Array job id -> the array indices submitit's folder holds for it (one `<array>_<index>_...` file a task)."""
    tasks: dict[str, set[int]] = {}
    for path in (sweep / ".submitit").rglob("*_submitted.pkl"):
        array, index = path.name.split("_")[:2]
        tasks.setdefault(array, set()).add(int(index))
    return tasks


@pytest.mark.xdist_group("slurm")
def test_a_slurm_sweep_of_12_runs_is_cut_into_arrays_and_its_resume_submits_only_the_runs_not_finished(
        tmp_path, local_slurm):
    """12 one-step runs on the local SLURM, whose MaxArraySize is 8 (scripts/slurm_local.sh): two arrays, sharing
    array_parallelism=4 (two tasks each; the node runs two at once). The command is stopped (its jobs cancelled)
    once half the runs finished; `python -m harness.resume FOLDER tracking=mlflow`, from another directory, then
    submits only the others, each under its own job number and folder, leaves the finished ones alone, and logs all
    of them at its end."""
    sweep = tmp_path / "sweep"
    command = [*SLURM, "backend=jax", "budget=steps", "budget_steps=1", "batch_size=32", "probes=false",
               "dataset.num_samples=600", "seed=range(0,12)", "hydra.launcher.array_parallelism=4",
               f"hydra.sweep.dir={sweep}", "-m"]
    log = open(tmp_path / "first.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=tmp_path, text=True, stdout=log,
                            stderr=subprocess.STDOUT)

    def finished() -> dict[int, dict]:
        done = {}
        for num in range(12):
            try:
                run = record(sweep / str(num))
            except (OSError, ValueError):
                continue
            if run["status"] == "completed":
                done[num] = run
        return done

    try:
        deadline = time.monotonic() + 400
        while len(finished()) < 6 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        first_arrays = _submitted_tasks(sweep)
    finally:
        _stop_job(proc, sweep)
        log.close()
    first = finished()
    assert 6 <= len(first) < 12, (len(first), (tmp_path / "first.log").read_text()[-3000:])
    assert sorted(len(indices) for indices in first_arrays.values()) == [4, 8], first_arrays
    # what the tasks share is written once a submission, not into each task's file (52 KB each before)
    assert max(path.stat().st_size for path in (sweep / ".submitit").rglob("*_submitted.pkl")) < 2048
    assert "at most 2 at once" in (tmp_path / "first.log").read_text()

    # resumed from another directory by the line a resume prints, with tracking=mlflow, which is no run's config:
    # the same runs; a SQLite store takes no writes from the cluster's runs (often on NFS), and the sweep's end
    # logs every run from its files
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = subprocess.run([sys.executable, "-m", "harness.resume", str(sweep), "tracking=mlflow"], cwd=elsewhere,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    left = 12 - len(first)
    said = resumed.stdout + resumed.stderr
    assert f"{len(first)} of 12 runs already finished in {sweep}: submitting the other {left}" in said
    new_arrays = {array: tasks for array, tasks in _submitted_tasks(sweep).items() if array not in first_arrays}
    assert sum(len(indices) for indices in new_arrays.values()) == left, new_arrays
    for num in range(12):
        run = record(sweep / str(num))
        assert run["status"] == "completed" and f"seed={num}" in run["overrides"], (num, run)
        if num in first:  # left alone: the same attempt, not run again
            assert run["finished_at"] == first[num]["finished_at"], num
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert json.loads((sweep / "tracking.json").read_text())["live_by"] is None
    parent, runs = sweep_runs(uri, sweep)
    assert sorted(runs, key=int) == [str(num) for num in range(12)] and parent.info.status == "FINISHED"
    for num, run in runs.items():
        assert run.info.status == "FINISHED"
        assert_run_matches_files(uri, run, sweep / num)
