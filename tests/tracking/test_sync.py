"""A sweep in MLflow from its files (harness.tracking.sync), checked with MLflow's own client against a SQLite store:
the parent run and its children, params, every metric history equal to metrics.parquet, statuses, artifacts; a
second pass logs nothing; a run MLflow holds in part gets only what it lacks."""
import json

import pytest

from harness.tracking import settings, sync
from tests.helpers.sweeps import make_run
from tests.helpers.tracking import assert_run_matches_files, client, histories, sweep_runs

STATUSES = {"completed": "FINISHED", "diverged": "FINISHED", "failed": "FAILED", "interrupted": "KILLED",
            "running": "RUNNING"}


def default_tracking(sweep):
    return settings.from_dict({"uri": None, "experiment": None}, sweep)


def test_the_default_store_is_sqlite_beside_the_sweep_folders(tmp_path):
    tracking = default_tracking(tmp_path / "sweeps" / "s")
    assert tracking.uri == f"sqlite:///{tmp_path / 'sweeps' / 'mlflow.db'}"
    assert tracking.artifacts == (tmp_path / "sweeps" / "mlartifacts").as_uri() and tracking.experiment == "s"
    named = settings.from_dict({"uri": "http://127.0.0.1:5000", "experiment": "mine"}, tmp_path / "s")
    assert (named.uri, named.experiment, named.artifacts) == ("http://127.0.0.1:5000", "mine", None)


@pytest.mark.parametrize("cfg, key", [({"uri": "localhost:5000"}, "tracking.uri"),
                                      ({"experiment": " "}, "tracking.experiment"),
                                      ({"uri": None, "port": 5000}, "tracking.port"),
                                      ({"nice": 20}, "tracking.nice"), ({"nice": "low"}, "tracking.nice")])
def test_a_bad_tracking_key_names_the_key_and_what_is_allowed(tmp_path, cfg, key):
    with pytest.raises(settings.ConfigError) as err:
        settings.from_dict(cfg, tmp_path)
    assert str(err.value).startswith(f"{key}=") and "not allowed" in str(err.value)


def test_a_sweep_logged_from_its_files_matches_them(tmp_path):
    sweep = tmp_path / "sweeps" / "s"
    for job, status in enumerate(STATUSES):
        make_run(sweep, job, status=status, batch_size=8 * 2 ** job, finished=status != "running",
                 val=(0.4, 0.5, float("nan")) if status == "diverged" else (0.5, 0.7, 0.8))
    (sweep / "0" / "probes.json").write_text(json.dumps({"hessian_top_eigenvalue": 12.5, "sharpness": 3.0,
                                                         "eigen_converged": True, "seconds": 2.0, "error": None}))
    tracking = default_tracking(sweep)
    result = sync.sync_sweep(sweep, tracking, artifacts=[sweep / "0" / "run.json"], status=sync.sweep_status(sweep))
    assert result.runs == 5 and result.live_errors == []

    parent, runs = sweep_runs(tracking.uri, sweep)
    assert set(runs) == {"0", "1", "2", "3", "4"}
    assert parent.info.status == "FAILED"  # a run failed
    assert [a.path for a in client(tracking.uri).list_artifacts(parent.info.run_id)] == ["run.json"]
    for job, status in enumerate(STATUSES):
        run = runs[str(job)]
        assert run.info.status == STATUSES[status], job
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["harness.run_id"] == f"s/{job}" and run.data.tags["harness.sweep"] == "s"
        assert_run_matches_files(tracking.uri, run, sweep / str(job))
        assert run.info.run_name.startswith(f"{job} batch_size=")
    diverged = histories(tracking.uri, runs["1"].info.run_id, ["val_acc", "epoch"])
    assert [step for step, _ in diverged["val_acc"]] == [1, 2]  # the NaN epoch's value left out, the epoch kept
    assert [step for step, _ in diverged["epoch"]] == [1, 2, 3]
    assert runs["0"].data.metrics["hessian_top_eigenvalue"] == 12.5 and runs["0"].data.metrics["probe_seconds"] == 2
    assert "eigen_converged" not in runs["0"].data.metrics
    assert [a.path for a in client(tracking.uri).list_artifacts(runs["0"].info.run_id)] == ["run.json"]

    again = sync.sync_sweep(sweep, artifacts=[], status="FAILED")  # the store from tracking.json
    assert again.runs == 0
    assert_run_matches_files(tracking.uri, runs["0"], sweep / "0")  # still one value per step


def test_a_run_mlflow_holds_in_part_gets_only_what_it_lacks(tmp_path):
    """A run whose tracker stopped after epoch 1 (killed, or the server went away): its run continues, each epoch
    once, and its status follows run.json's."""
    sweep = tmp_path / "sweeps" / "s"
    make_run(sweep, 0, status="running", finished=False, val=(0.5,))
    tracking = default_tracking(sweep)
    sync.sync_sweep(sweep, tracking)
    _, runs = sweep_runs(tracking.uri, sweep)
    first = runs["0"].info.run_id
    assert runs["0"].info.status == "RUNNING"

    (sweep / "0").rename(tmp_path / "old")  # the run resumed, finished, and recorded the same MLflow run
    make_run(sweep, 0, status="completed", val=(0.5, 0.7, 0.8))
    record = json.loads((sweep / "0" / "run.json").read_text())
    record["tracking"] = json.loads((tmp_path / "old" / "run.json").read_text())["tracking"] | {"error": "refused"}
    (sweep / "0" / "run.json").write_text(json.dumps(record))
    result = sync.sync_sweep(sweep, status="FINISHED")
    assert result.runs == 1 and result.live_errors == ["refused"]
    parent, runs = sweep_runs(tracking.uri, sweep)
    assert runs["0"].info.run_id == first and runs["0"].info.status == "FINISHED" and parent.info.status == "FINISHED"
    assert_run_matches_files(tracking.uri, runs["0"], sweep / "0")  # epoch 1 once, 2 and 3 added
    assert "error" not in json.loads((sweep / "0" / "run.json").read_text())["tracking"]


def test_a_tracker_that_does_not_answer_fails_in_one_line(tmp_path):
    sweep = tmp_path / "sweeps" / "s"
    make_run(sweep, 0)
    closed = settings.from_dict({"uri": "http://127.0.0.1:9", "experiment": None}, sweep)  # the discard port
    with pytest.raises(sync.TrackingFailed) as err:
        sync.sync_sweep(sweep, closed)
    assert str(err.value).startswith("cannot connect") and "\n" not in str(err.value)
    recorded = settings.read_sweep(sweep)
    assert recorded.parent_run_id is None and recorded.live_by is None and recorded.error == str(err.value)


def test_a_run_made_by_a_tracker_that_stopped_before_its_params_gets_them(tmp_path):
    """The server went away between a run's creation and its params (seen in CI): the end's sync, or harness.track,
    logs them."""
    from harness.tracking import mlflow_store

    sweep = tmp_path / "sweeps" / "s"
    make_run(sweep, 0, status="completed", val=(0.5, 0.7))
    tracking = default_tracking(sweep)
    started = sync.start_sweep(sweep, tracking, live_by="command", jobs=1)
    store = mlflow_store.store(tracking.uri)
    record = json.loads((sweep / "0" / "run.json").read_text())
    made = store.create_run(started.experiment_id, "0", sync.run_tags(record), started.parent_run_id)
    assert client(tracking.uri).get_run(made).data.params == {}

    assert sync.sync_sweep(sweep, status="FINISHED").runs == 1
    _, runs = sweep_runs(tracking.uri, sweep)
    assert runs["0"].info.run_id == made
    assert_run_matches_files(tracking.uri, runs["0"], sweep / "0")
    assert sync.sync_sweep(sweep, status="FINISHED").runs == 0


def test_the_parent_run_counts_the_jobs_as_planned_at_the_end(tmp_path):
    """A study planned in rounds adds jobs after its parent run started: at the end the parent's harness.jobs is
    what sweep.json plans then, not what the first round did."""
    sweep = tmp_path / "sweeps" / "s"
    make_run(sweep, 0)
    tracking = default_tracking(sweep)
    sync.start_sweep(sweep, tracking, live_by=None, jobs=1)
    make_run(sweep, 1, batch_size=64)
    (sweep / "sweep.json").write_text(json.dumps({"format": 2, "jobs": [{"job": "0"}, {"job": "1"}, {"job": "2"}]}))
    sync.sync_sweep(sweep, status="KILLED")
    parent, _ = sweep_runs(tracking.uri, sweep)
    assert parent.data.tags["harness.jobs"] == "3"
