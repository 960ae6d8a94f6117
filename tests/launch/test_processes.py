"""Every child the command starts (a run, a warm worker, the tracking process) dies with the command, and starting
one runs no Python code in the command: a SIGTERM whose handler raised inside Python's at-fork hooks was lost and
left logging's lock taken, and the command hung at its sweep's end (CI: the SIGTERM stress test, 180 s). A signal
as the command starts a run, or one whose exception was lost, still stops every run."""
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from harness.launch import processes, signals
from harness.launch.scheduler import Job, Scheduler
from harness.run import stop
from tests.conftest import REPO
from tests.helpers.runs import record

STARTS = """
import json, os, sys
from pathlib import Path
from harness.launch.scheduler import Job, Scheduler
from harness.launch.tracker import Tracker
from harness.launch.worker import Worker
from harness.tracking.settings import Tracking

hooks, seen = [], {}
os.register_at_fork(before=lambda: hooks.append("before"), after_in_parent=lambda: hooks.append("after"))
out = Path(sys.argv[1])
job = Job(num=0, overrides=[], run_dir=out / "run", command=[sys.executable, "-c", "pass"])
Scheduler([job], n_jobs=1, gpu_ids=[], poll_seconds=0.05).run()
seen["run"] = list(hooks)
worker = Worker(out, os.environ.copy())
worker.process.kill()
seen["worker"] = list(hooks)
tracker = Tracker(out, Tracking(uri="sqlite:///" + str(out / "mlflow.db"), experiment="x"), "command", 1, None)
tracker.process.kill()
seen["tracker"] = list(hooks)
print(json.dumps(seen))
"""


def test_starting_a_run_a_worker_or_the_tracking_process_runs_no_python_at_fork_hook_in_the_command(tmp_path):
    done = subprocess.run([sys.executable, "-c", STARTS, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"run": [], "worker": [], "tracker": []}


ARMED_CHILD = """
import os, subprocess, sys, time
from harness.launch.processes import DIE_WITH, die_with_parent
die_with_parent()
grandchild = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get({name!r}))"],
                            capture_output=True, text=True).stdout.strip()
open(sys.argv[1] + ".part", "w").write(grandchild)
os.replace(sys.argv[1] + ".part", sys.argv[1])  # whole when it appears
time.sleep(120)
""".format(name=processes.DIE_WITH)

COMMAND = """
import subprocess, sys, time
from harness.launch.processes import child_env
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], env=child_env(), start_new_session=True)
print(child.pid, flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_started_with_child_env_dies_when_the_command_is_killed_and_its_own_children_are_not_armed(
        tmp_path):
    armed = tmp_path / "armed"
    command = subprocess.Popen([sys.executable, "-c", COMMAND, ARMED_CHILD, str(armed)], cwd=REPO,
                               stdout=subprocess.PIPE, text=True)
    child = psutil.Process(int(command.stdout.readline()))
    deadline = time.monotonic() + 60
    while not armed.exists() and time.monotonic() < deadline:  # the child has armed itself and run its own child
        time.sleep(0.05)
    assert armed.read_text() == "None"  # the grandchild's environment names no command to die with
    assert child.is_running()
    command.kill()  # kill -9: no handler of the command runs
    command.wait()
    try:
        child.wait(timeout=60)  # not its parent: no exit code to read, only whether it is gone
    except psutil.TimeoutExpired:
        pass
    assert _gone(child)


def _gone(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE  # ended, not yet reaped
    except psutil.NoSuchProcess:
        return True


GONE_COMMAND = str(2**22 + 1)  # above any pid Linux gives: the command the child names is not its parent


def test_a_child_whose_command_died_before_it_armed_kills_itself(tmp_path):
    """The command killed between the child's start and its arming: no death signal would ever come, so the
    child, finding another parent than the one its environment names, ends at once."""
    code = "from harness.launch.processes import die_with_parent; die_with_parent(); print('went on')"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, processes.DIE_WITH: GONE_COMMAND},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL and "went on" not in done.stdout


@pytest.mark.parametrize("entry", [["harness", "epochs=1"], ["harness.worker", "sweep"],
                                   ["harness.launch.tracking_process", "sweep"]])
def test_every_process_the_command_starts_arms_itself_first(entry, tmp_path):
    """A run, a warm worker and the tracking process each arm themselves before anything else: started for a
    command that is gone, each ends at once (killed), having read no job and written nothing."""
    done = subprocess.run([sys.executable, "-m", *entry], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), processes.DIE_WITH: GONE_COMMAND},
                          stdin=subprocess.DEVNULL)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


def test_a_signal_whose_exception_was_lost_still_stops_the_runs_and_the_command(tmp_path):
    """The handler records the signal before it raises (harness.launch.signals): where the exception is lost (Python
    only prints one raised in a __del__ or an at-fork hook), the scheduler acts on the record at its next look."""
    started = tmp_path / "started"
    sleeper = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"
    job = Job(num=0, overrides=[], run_dir=tmp_path / "sweep" / "0", command=[sys.executable, "-c", sleeper])

    def progress(line, final):
        if started.exists() and not final:
            stop.ask(signal.SIGTERM)  # what the handler does first; its exception never comes

    scheduler = Scheduler([job], n_jobs=1, gpu_ids=[], poll_seconds=0.05, stop_timeout=30, progress=progress)
    try:
        with pytest.raises(stop.Interrupted) as raised:
            scheduler.run()
    finally:
        stop.clear()
    assert raised.value.signum == signal.SIGTERM
    assert scheduler.exit_codes == {0: -signal.SIGINT}  # the run was stopped as on Ctrl-C, not waited out


def test_a_signal_as_a_run_starts_stops_that_run_with_the_others(tmp_path, monkeypatch):
    """The handler runs just after the run's process started, before the scheduler has it among its runs: the
    exception waits until it has, so the run is stopped and recorded `interrupted`, not left running alone."""
    sleeper = "import time; time.sleep(60)"
    job = Job(num=0, overrides=[], run_dir=tmp_path / "sweep" / "0", command=[sys.executable, "-c", sleeper])
    start = Scheduler._start

    def start_then_signal(self, job, gpu_ids):
        running = start(self, job, gpu_ids)
        signals._raise(signal.SIGTERM, None)  # as the signal lands between the start and the record
        return running

    monkeypatch.setattr(Scheduler, "_start", start_then_signal)
    scheduler = Scheduler([job], n_jobs=1, gpu_ids=[], poll_seconds=0.05, stop_timeout=30)
    try:
        with pytest.raises(stop.Interrupted):
            scheduler.run()
    finally:
        stop.clear()
    assert scheduler.exit_codes == {0: -signal.SIGINT}
    assert record(tmp_path / "sweep" / "0")["status"] == "interrupted"


def test_a_signal_held_while_a_run_could_not_start_is_still_acted_on(tmp_path, monkeypatch):
    """The run's folder cannot be written (OSError) just as the signal lands: the command stops, it does not go
    on to the sweep's end as if no signal had come."""
    job = Job(num=0, overrides=[], run_dir=tmp_path / "sweep" / "0", command=[sys.executable, "-c", "pass"])

    def signal_then_fail(self, job, gpu_ids):
        signals._raise(signal.SIGTERM, None)
        raise OSError(28, "No space left on device", str(job.run_dir))

    monkeypatch.setattr(Scheduler, "_start", signal_then_fail)
    with pytest.raises(stop.Interrupted):
        Scheduler([job], n_jobs=1, gpu_ids=[], poll_seconds=0.05).run()
