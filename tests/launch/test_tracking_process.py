"""The command's tracking process (harness.launch.tracking_process): it runs at the lowest priority where it logs the
runs from their files, and it finds them there itself (RunWatch): which run trains now, which ended since."""
import json
import os
from pathlib import Path

from harness.launch import launchers
from harness.launch.tracker import niceness, run_files_before
from harness.launch.tracker import start as start_tracker
from harness.launch.tracking_process import RunWatch
from harness.tracking import live, settings

HARNESS_LAUNCHER = launchers.traits("hydra_plugins.harness_launcher.launcher.HarnessLauncher")


def test_the_tracking_process_runs_at_the_lowest_priority_only_where_no_run_waits_for_it(tmp_path):
    """Where runs log themselves they wait for its parent run: it runs as they do there. One real process (the
    harness launcher's, at the default 19): its own niceness and its session's autogroup, where the kernel shares
    the CPU by session first."""
    tracking = settings.from_dict({"uri": None}, tmp_path / "sweeps" / "s")
    assert niceness("command", tracking) == niceness(None, tracking) == 19 and niceness("run", tracking) == 0
    assert niceness("command", settings.from_dict({"uri": None, "nice": 7}, tmp_path / "sweeps" / "s")) == 7
    sweep = tmp_path / "sweeps" / "s"
    tracker = start_tracker(sweep, tracking, jobs=0, launcher=HARNESS_LAUNCHER)
    assert live.wait_ready(sweep, timeout=300).parent_run_id  # a bound for a failure, not a duration
    assert os.getpriority(os.PRIO_PROCESS, tracker.process.pid) - os.getpriority(os.PRIO_PROCESS, 0) == 19
    group = Path(f"/proc/{tracker.process.pid}/autogroup")
    if group.exists():
        assert group.read_text().split()[-1] == "19"
    tracker.end([])
    assert tracker.process.returncode == 0


def _status(sweep: Path, job: int, status: str, **note) -> Path:
    """A run.json of `status`, with a newer modification time than any written before (a coarse clock cannot hide
    a change)."""
    run_dir = sweep / str(job)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "run.json"
    path.write_text(json.dumps({"run_id": f"s/{job}", "status": status, "config": {}, **note}))
    _status.writes = getattr(_status, "writes", 0) + 1
    stamp = 10**18 + _status.writes * 10**9
    os.utime(path, ns=(stamp, stamp))
    return run_dir


def test_the_run_watch_finds_the_runs_that_train_and_those_that_ended_in_their_files(tmp_path):
    """A run ends once: when its run.json turns from running to a final status, or is first seen final but written
    since the command started (a fast run that ended before the process first looked); not when it was final
    before the command, nor when a tracker's note rewrites it."""
    sweep = tmp_path / "s"
    _status(sweep, 0, "completed")
    stale = _status(sweep, 1, "interrupted")
    watch = RunWatch(sweep, run_files_before(sweep))  # the command's baseline, before any run of its starts
    fast = _status(sweep, 5, "completed")  # started and ended before the process's first look
    assert watch.look() == ([], [fast])
    first, resumed = _status(sweep, 2, "running"), _status(sweep, 1, "running")
    assert watch.look() == ([resumed, first], [])
    _status(sweep, 2, "failed")  # the scheduler's record of a run that died
    lost = _status(sweep, 3, "completed")  # started and ended between two looks
    assert watch.look() == ([resumed], [first, lost])
    _status(sweep, 3, "completed", tracking={"run_id": "abc"})  # rewritten by the tracker: it did not end again
    (sweep / "4").mkdir()  # a run folder before its run.json
    _status(sweep, 1, "completed")
    assert watch.look() == ([], [stale])
