"""The one module that imports MLflow: a tracking store as the harness uses it, through MLflow's own client.

Imported only when tracking is on (harness.tracking.sync and .live import it inside their functions). A
tracker that does not answer must not hold a run up for minutes: MLflow's HTTP client retries 7 times with a
backoff factor of 2 and waits 120 s for each reply by default; here, unless the environment says otherwise,
2 retries and 20 s. Nor does it print a link to every run it ends (the MLflow UI lists them).
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

for _name, _value in (("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2"), ("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1"),
                      ("MLFLOW_HTTP_REQUEST_TIMEOUT", "20"), ("MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS", "2"),
                      ("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")):  # a line per run ended, on a server
    os.environ.setdefault(_name, _value)

from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import Metric, Param, RunTag, ViewType  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

# creating a store's tables logs each migration at INFO, and a server that does not answer each retry at WARNING
# (to the console, after the report's path): one line of the harness's says what matters instead
for _logger, _level in (("mlflow.store.db.utils", logging.WARNING), ("alembic", logging.WARNING),
                        ("urllib3.connectionpool", logging.ERROR)):
    logging.getLogger(_logger).setLevel(_level)

MAX_PARAMS, MAX_METRICS = 100, 1000  # MLflow's limits on one log_batch


@dataclass(frozen=True)
class Child:
    """A run as the store has it: its id, status, the last epoch it holds (0: none) and its params' names."""
    run_id: str
    status: str
    last_epoch: int
    params: frozenset[str] = frozenset()


class Store:
    """One tracking URI (sqlite:///..., http://HOST:PORT, ...)."""

    def __init__(self, uri: str):
        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        self.queued: dict[str, list] = {}  # run id -> its batches in MLflow's asynchronous queue

    def experiment_id(self, name: str, artifacts: str | None = None) -> str:
        """The experiment called `name`, created (with `artifacts` as its artifact root) when there is none."""
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            if found.lifecycle_stage == "deleted":
                self.client.restore_experiment(found.experiment_id)
            return found.experiment_id
        try:
            return self.client.create_experiment(name, artifact_location=artifacts)
        except MlflowException:  # another process created it meanwhile
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def create_run(self, experiment_id: str, name: str, tags: dict[str, str], parent: str | None = None,
                   start_time: float | None = None) -> str:
        tags = {**tags, **({"mlflow.parentRunId": parent} if parent else {})}
        run = self.client.create_run(experiment_id, run_name=name, tags=tags,
                                     start_time=None if start_time is None else int(start_time * 1000))
        return run.info.run_id

    def exists(self, run_id: str) -> bool:
        """Whether the store holds the run, not deleted."""
        try:
            return self.client.get_run(run_id).info.lifecycle_stage != "deleted"
        except MlflowException:
            return False

    def find(self, experiment_id: str, tag: str, value: str) -> str | None:
        """The live run whose `tag` is `value`, or None."""
        runs = self.client.search_runs([experiment_id], filter_string=f"tags.`{tag}` = '{_quoted(value)}'",
                                       max_results=1)
        return runs[0].info.run_id if runs else None

    def children(self, experiment_id: str, parent: str, key_tag: str, epoch_key: str) -> dict[str, Child]:
        """The parent's runs by their `key_tag`, each with its status and its `epoch_key` metric's latest value,
        in pages of 1000 (one query per page, whatever the sweep's size)."""
        found: dict[str, Child] = {}
        token = None
        while True:
            page = self.client.search_runs([experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent}'",
                                           run_view_type=ViewType.ACTIVE_ONLY, max_results=1000, page_token=token)
            for run in page:
                key = run.data.tags.get(key_tag)
                if key is not None:
                    found[key] = Child(run.info.run_id, run.info.status, int(run.data.metrics.get(epoch_key, 0)),
                                       frozenset(run.data.params))
            token = page.token
            if not token:
                return found

    def params(self, run_id: str) -> dict[str, str]:
        return dict(self.client.get_run(run_id).data.params)

    def log_params(self, run_id: str, params: dict[str, str]) -> None:
        items = [Param(key, value) for key, value in params.items()]
        for start in range(0, len(items), MAX_PARAMS):
            self.client.log_batch(run_id, params=items[start:start + MAX_PARAMS])

    def set_tags(self, run_id: str, tags: dict[str, str]) -> None:
        self.client.log_batch(run_id, tags=[RunTag(key, value) for key, value in tags.items()])

    def log_step(self, run_id: str, step: int, values: dict[str, float], queued: bool = False,
                 tags: dict[str, str] | None = None) -> None:
        """One step's metrics (and `tags`) in one log_batch (at most MAX_METRICS metrics): all of the step or none.

        `queued`: through MLflow's asynchronous queue, which writes the batches waiting for one run in one
        transaction (MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS apart: a SQLite write costs 10-15 ms of CPU, whatever
        it holds); `wait` for them, and for their errors."""
        now = int(time.time() * 1000)
        metrics = [Metric(key, value, now, step) for key, value in values.items()]
        for start in range(0, max(len(metrics), 1), MAX_METRICS):
            extra = [RunTag(key, value) for key, value in (tags or {}).items()] if start == 0 else []
            operation = self.client.log_batch(run_id, metrics=metrics[start:start + MAX_METRICS], tags=extra,
                                              synchronous=not queued)
            if queued:
                self.queued.setdefault(run_id, []).append(operation)

    def wait(self, run_id: str) -> None:
        """Until the run's queued batches are written; raises the first one's error."""
        for operation in self.queued.pop(run_id, []):
            operation.wait()

    def steps(self, run_id: str, key: str) -> list[int]:
        """The steps at which the run holds `key`, as logged (a step twice is there twice)."""
        return [metric.step for metric in self.client.get_metric_history(run_id, key)]

    def history(self, run_id: str, key: str) -> dict[int, float]:
        return {metric.step: metric.value for metric in self.client.get_metric_history(run_id, key)}

    def log_artifact(self, run_id: str, path: Path, folder: str | None = None) -> None:
        self.client.log_artifact(run_id, str(path), artifact_path=folder)

    def set_status(self, run_id: str, status: str, end_time: float | None = None) -> None:
        """RUNNING, or a terminal status (FINISHED, FAILED, KILLED) with its end time."""
        if status == "RUNNING":
            self.client.update_run(run_id, status="RUNNING")
        else:
            self.client.set_terminated(run_id, status, end_time=None if end_time is None else int(end_time * 1000))

    def delete(self, run_id: str) -> None:
        self.client.delete_run(run_id)


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")


_stores: dict[str, Store] = {}


def store(uri: str) -> Store:
    """The Store of `uri`, made once per process: a warm worker's runs share it (opening a SQLite store checks
    its schema, about 0.8 s). A new SQLite file is made by one process at a time: two runs opening it at once
    would both create its tables (measured: "duplicate column name: step")."""
    if uri not in _stores:
        if uri.startswith("sqlite:///"):
            with _folder_locked(Path(uri.removeprefix("sqlite:///")).parent):
                _stores[uri] = Store(uri)
        else:
            _stores[uri] = Store(uri)
    return _stores[uri]


@contextlib.contextmanager
def _folder_locked(folder: Path):
    """An exclusive lock on `folder` itself (flock on its descriptor: no file of its own), made if missing."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and the lock with it
