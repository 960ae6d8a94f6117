"""Which runs log themselves: tracking.* is no run's config, a SLURM sweep with a SQLite store leaves the logging to
its end, a run of a sweep whose command could not reach the tracker does not try; and a tracker that fails mid-run
is one warning line and one note in run.json, never the run's failure."""
import json

import pytest

from harness.launch import launchers, sweep_end
from harness.launch.cli import plan_command
from harness.launch.tracker import live_by as who_logs_live
from harness.launch.tracker import start as start_tracker
from harness.store.run_files import RunRecord, config_hash
from harness.tracking import live, settings
from tests.helpers.sweeps import CONFIG, make_run

SLURM = ["hydra/launcher=slurm", "hydra.launcher.partition=debug"]


def test_tracking_is_not_run_config_so_a_sweep_resumes_with_or_without_it(tmp_path):
    plain = plan_command(["batch_size=8,64", f"hydra.sweep.dir={tmp_path / 's'}"], multirun=True)
    tracked = plan_command(["batch_size=8,64", "tracking=mlflow", "tracking.experiment=x",
                            f"hydra.sweep.dir={tmp_path / 's'}"], multirun=True)
    assert [config_hash(c.identity()) for c in plain.run_configs] == [config_hash(c.identity()) for c in tracked.run_configs]
    assert plain.tracking is None and tracked.tracking.experiment == "x"
    assert tracked.tracking.uri == f"sqlite:///{tmp_path / 'mlflow.db'}"


def test_a_bad_tracking_value_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(settings.ConfigError, match="tracking.uri='mlflow.db' is not allowed"):
        plan_command(["tracking=mlflow", "tracking.uri=mlflow.db", f"hydra.run.dir={tmp_path / 'r'}"], False)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("launcher, uri, live_by", [
    ("hydra_plugins.harness_launcher.launcher.HarnessLauncher", None, "command"),  # MLflow imported once, not per run
    ("hydra_plugins.harness_launcher.slurm.HarnessSlurmLauncher", None, None),     # a SQLite file on NFS: at the end
    ("hydra_plugins.harness_launcher.slurm.HarnessSlurmLauncher", "http://mlflow:5000", "run"),  # a server: live
    ("hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher", None, None),
    ("hydra._internal.core_plugins.basic_launcher.BasicLauncher", None, "run"),
    ("my_lab.launchers.Mine", None, "run"),  # a class this machine cannot import declares nothing
])
def test_who_logs_the_runs_as_they_train(tmp_path, launcher, uri, live_by):
    """The harness launcher's command logs its runs from their files; under SLURM a SQLite store (often on NFS)
    takes no writes from the runs, and the sweep's end logs them; under other launchers each run logs itself."""
    tracking = settings.from_dict({"uri": uri, "experiment": None}, tmp_path / "sweeps" / "s")
    assert who_logs_live(launchers.traits(launcher), tracking) == live_by


def test_the_tracking_process_makes_the_parent_run_and_says_who_logs_live(tmp_path):
    """One real tracking process, where runs log themselves: they find the parent run ready in tracking.json."""
    sweep = tmp_path / "sweeps" / "s"
    tracking = settings.from_dict({"uri": None, "experiment": None}, sweep)
    started = start_tracker(sweep, tracking, jobs=1, launcher=launchers.traits("BasicLauncher"))
    _, logs_itself = live.sweep_of(sweep, tracking)  # waits for the tracking process where the runs log
    assert logs_itself is True
    assert live.wait_ready(sweep, timeout=60).parent_run_id
    started.end([])
    assert started.process.returncode == 0
    recorded = settings.read_sweep(sweep)
    assert recorded.live_by == "run" and recorded.parent_run_id and recorded.ready


def test_a_tracker_that_fails_is_one_warning_line_and_a_note_and_the_run_goes_on(tmp_path, capfd):
    sweep = tmp_path / "sweeps" / "s"
    closed = settings.from_dict({"uri": "http://127.0.0.1:9", "experiment": None}, sweep)
    started = start_tracker(sweep, closed, jobs=1, launcher=launchers.traits("BasicLauncher"))
    assert live.sweep_of(sweep, closed)[1] is False  # its runs do not try
    started.end([])  # the command: a line as the runs start, one at the end naming harness.track
    said = capfd.readouterr().err.splitlines()
    assert len(said) == 2 and said[0].startswith("harness: warning: tracking: http://127.0.0.1:9 does not answer")
    assert said[1].endswith(f"log it with: python -m harness.track {sweep}")

    run_dir = make_run(tmp_path / "single", 0)  # a single run: it tries, and fails once
    record = RunRecord(run_dir, "single/0", CONFIG, [])
    tracker = live.open_tracker(closed, run_dir, record)
    tracker.start([], 0)
    tracker.add_epoch({"epoch": 1, "val_acc": 0.5})
    tracker.flush()
    tracker.finish()
    said = capfd.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("harness: warning: tracking: http://127.0.0.1:9 failed (cannot")
    assert record.data["tracking"]["error"].startswith("cannot connect")


def test_tracking_without_mlflow_installed_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else find_spec(name, *a))
    with pytest.raises(settings.ConfigError, match=r"install MLflow first: pip install -e \"\.\[mlflow\]\""):
        settings.from_dict({"uri": None, "experiment": None}, tmp_path)


@pytest.mark.parametrize("content, written", [({"study": "diagnose"}, "diagnosis.json"),
                                              ({"study": "recover"}, "recovery.json"),
                                              ({"study": "choose"}, "choice.json"),
                                              ({"diagnose": {"arms": {"0": "as_is"}}}, "diagnosis.json")],
                         ids=["diagnose", "recover", "choose", "detected"])
def test_the_parent_run_keeps_the_report_the_results_table_and_the_study_s_file(tmp_path, content, written):
    """The files the sweep's study writes (its file_names) go with the sweep, the study named in sweep.json or
    detected from it as the report detects it (a sweep.json recorded without a study's name); another study's
    files do not."""
    from harness.report.html import report_path

    sweep = tmp_path / "sweeps" / "s"
    make_run(sweep, 0)
    for path in (sweep / "diagnosis.json", sweep / "recovery.json", sweep / "choice.json",
                 report_path(sweep, tmp_path / "reports")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    (sweep / "sweep.json").write_text(json.dumps(content))
    kept = sweep_end.sweep_artifacts(sweep, tmp_path, tmp_path / "reports")
    assert [p.name for p in kept] == ["sweep.json", written, report_path(sweep).name, "results.csv"]
    assert "val_acc" in (tmp_path / "results.csv").read_text().splitlines()[0]
