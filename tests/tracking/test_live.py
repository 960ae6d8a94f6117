"""Which runs log themselves: tracking.* is no run's config, a SLURM sweep with a SQLite store leaves the logging to
its end, a run of a sweep whose command could not reach the tracker does not try; and a tracker that fails mid-run
is one warning line and one note in run.json, never the run's failure."""
import pytest

from harness.launch import sweep_end
from harness.launch.cli import plan_command
from harness.store.run_files import RunRecord, config_hash
from harness.tracking import live, settings
from tests.helpers.sweeps import CONFIG, make_run

SLURM = ["hydra/launcher=slurm", "hydra.launcher.partition=debug"]


def test_tracking_is_not_run_config_so_a_sweep_resumes_with_or_without_it(tmp_path):
    plain = plan_command(["batch_size=8,64", f"hydra.sweep.dir={tmp_path / 's'}"], multirun=True)
    tracked = plan_command(["batch_size=8,64", "tracking=mlflow", "tracking.experiment=x",
                            f"hydra.sweep.dir={tmp_path / 's'}"], multirun=True)
    assert [config_hash(c.flat()) for c in plain.run_configs] == [config_hash(c.flat()) for c in tracked.run_configs]
    assert plain.tracking is None and tracked.tracking.experiment == "x"
    assert tracked.tracking.uri == f"sqlite:///{tmp_path / 'mlflow.db'}"


def test_a_bad_tracking_value_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(settings.ConfigError, match="tracking.uri='mlflow.db' is not allowed"):
        plan_command(["tracking=mlflow", "tracking.uri=mlflow.db", f"hydra.run.dir={tmp_path / 'r'}"], False)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("remote, live_runs", [(False, True), (True, False)])
def test_runs_on_other_machines_do_not_write_to_a_sqlite_store(tmp_path, remote, live_runs):
    """Under SLURM a SQLite file (often on NFS) takes no writes from the runs: the sweep's end logs them."""
    sweep = tmp_path / "sweeps" / "s"
    tracking = settings.from_dict({"uri": None, "experiment": None}, sweep)
    sweep_end.start_tracking(sweep, tracking, jobs=1, remote=remote)
    assert settings.read_sweep(sweep).live is live_runs and settings.read_sweep(sweep).parent_run_id
    run_dir = make_run(sweep, 0)
    tracker = live.open_tracker(tracking, run_dir, RunRecord(run_dir, "s/0", CONFIG, []))
    assert (not isinstance(tracker, live.Untracked)) is live_runs


def test_a_tracker_that_fails_is_one_warning_line_and_a_note_and_the_run_goes_on(tmp_path, capsys):
    sweep = tmp_path / "sweeps" / "s"
    closed = settings.from_dict({"uri": "http://127.0.0.1:9", "experiment": None}, sweep)
    sweep_end.start_tracking(sweep, closed, jobs=1, remote=False)  # the command: one line, the runs will not try
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("harness: warning: tracking: http://127.0.0.1:9 does not answer")
    assert isinstance(live.open_tracker(closed, make_run(sweep, 0), None), live.Untracked)

    run_dir = make_run(tmp_path / "single", 0)  # a single run: it tries, and fails once
    record = RunRecord(run_dir, "single/0", CONFIG, [])
    tracker = live.open_tracker(closed, run_dir, record)
    tracker.start([], 0)
    tracker.add_epoch({"epoch": 1, "val_acc": 0.5})
    tracker.flush()
    tracker.finish()
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("harness: warning: tracking: http://127.0.0.1:9 failed (cannot")
    assert record.data["tracking"]["error"].startswith("cannot connect")
