"""The command's tracking process (harness.launch.tracking_watch): it runs at the lowest priority where it logs the
runs from their files, and a process that does not read (busy, or stopped) never holds up the scheduler's polls."""
import os
import threading
from pathlib import Path

from harness.launch import sweep_end
from harness.tracking import live, settings
from tests.helpers.runs import frozen

HARNESS_LAUNCHER = "hydra_plugins.harness_launcher.launcher.HarnessLauncher"


def test_the_tracking_process_runs_at_the_lowest_priority_only_where_no_run_waits_for_it(tmp_path):
    """Where runs log themselves they wait for its parent run: it runs as they do there."""
    basic = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
    for name, (launcher, cfg, nice) in enumerate([(HARNESS_LAUNCHER, {}, 19), (HARNESS_LAUNCHER, {"nice": 7}, 7),
                                                   (basic, {}, 0)]):
        sweep = tmp_path / "sweeps" / str(name)
        tracker = sweep_end.start_tracking(sweep, settings.from_dict({"uri": None, **cfg}, sweep), jobs=0,
                                           launcher=launcher)
        assert live.wait_ready(sweep, timeout=60).parent_run_id
        assert os.getpriority(os.PRIO_PROCESS, tracker.process.pid) - os.getpriority(os.PRIO_PROCESS, 0) == nice
        group = Path(f"/proc/{tracker.process.pid}/autogroup")  # where the kernel shares the CPU by session first
        if group.exists():
            assert group.read_text().split()[-1] == str(nice)
        tracker.end([])
        assert tracker.process.returncode == 0


def test_a_tracking_process_that_does_not_read_never_holds_up_the_polls(tmp_path):
    sweep = tmp_path / "sweeps" / "s"
    tracker = sweep_end.start_tracking(sweep, settings.from_dict({"uri": None, "experiment": None}, sweep), jobs=0,
                                       launcher=HARNESS_LAUNCHER)
    with frozen(tracker.process.pid):
        runs = [sweep / f"{job:05d}-{'x' * 200}" for job in range(300)]  # far more than a pipe holds (64 KiB)
        polls = threading.Thread(target=lambda: [tracker.poll(runs[:n], []) for n in range(1, len(runs))],
                                 daemon=True)
        polls.start()
        polls.join(timeout=60)
        assert not polls.is_alive(), "a poll waited for the tracking process"
        assert len(tracker.unsent) > 65536  # kept for later, not lost
    tracker.end([])  # it reads it all (none of those folders exists), then ends
    assert tracker.process.returncode == 0 and tracker.unsent == b""
