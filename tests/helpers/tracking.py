"""What a test reads back from MLflow, with MLflow's own client: a sweep's parent run and its runs, their params,
metric histories (every logged value, so a step logged twice shows), artifacts and statuses."""
from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

# the columns harness.tracking.sync logs at step = epoch: `epoch` and the measured ones after it
MEASURED_FROM = "epoch"


def client(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def sweep_runs(uri: str, sweep_dir: Path) -> tuple[object, dict[str, object]]:
    """The sweep's parent run (the one its tracking.json names) and its child runs by job."""
    tracking = json.loads((Path(sweep_dir) / "tracking.json").read_text())
    mlflow = client(uri)
    parent = mlflow.get_run(tracking["parent_run_id"])
    children = mlflow.search_runs([tracking["experiment_id"]],
                                  filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    return parent, {run.data.tags["harness.job"]: run for run in children}


def histories(uri: str, run_id: str, keys) -> dict[str, list[tuple[int, float]]]:
    """Every logged (step, value) of each key, in step order (a step logged twice is there twice)."""
    mlflow = client(uri)
    return {key: sorted((m.step, m.value) for m in mlflow.get_metric_history(run_id, key)) for key in keys}


def expected_histories(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """metrics.parquet as the histories MLflow must hold: each measured column's finite values at step = epoch."""
    frame = pd.read_parquet(Path(run_dir) / "metrics.parquet")
    columns = list(frame.columns)
    measured = [c for c in columns[columns.index(MEASURED_FROM):] if pd.api.types.is_numeric_dtype(frame[c])
                and not pd.api.types.is_bool_dtype(frame[c])]
    return {c: [(int(e), float(v)) for e, v in zip(frame["epoch"], frame[c]) if v is not None and math.isfinite(v)]
            for c in measured}


def assert_run_matches_files(uri: str, run, run_dir: Path) -> None:
    """The MLflow run holds metrics.parquet's every measured value once (one value per step), run.json's config and
    the training recipe in force as params, and its status."""
    record = json.loads((Path(run_dir) / "run.json").read_text())
    expected = expected_histories(run_dir)
    assert histories(uri, run.info.run_id, expected) == expected
    assert run.data.params["batch_size"] == str(record["config"]["batch_size"])
    assert run.data.params["lr_schedule"] == record["recipe"]["lr_schedule"]
    assert set(run.data.params) == set(record["config"]) | set(record["recipe"])
    assert run.data.tags["harness.status"] == record["status"]
    assert record["tracking"]["run_id"] == run.info.run_id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# MLflow 3's server starts a job runner and six Huey consumers, each a Python process importing MLflow, for its
# GenAI jobs: the harness submits none, and on the 2-core CI machine they took the cores from the runs under test
NO_JOBS = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


class Server:
    """A real `mlflow server` on localhost, its store a SQLite file in `folder`; stop() and start() again on the
    same store and port."""

    def __init__(self, folder: Path):
        self.folder, self.port = Path(folder), free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 90) -> "Server":
        mlflow = Path(sys.executable).parent / "mlflow"
        self.log = open(self.folder / "server.log", "a")
        self.proc = subprocess.Popen(
            [str(mlflow), "server", "--backend-store-uri", f"sqlite:///{self.folder / 'server.db'}",
             "--artifacts-destination", str(self.folder / "artifacts"), "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **NO_JOBS})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    import urllib.request

                    urllib.request.urlopen(f"{self.uri}/health", timeout=2).read()
                    return self
            except OSError:
                assert self.proc.poll() is None, (self.folder / "server.log").read_text()[-3000:]
                time.sleep(0.25)
        raise AssertionError(f"mlflow server did not start: {(self.folder / 'server.log').read_text()[-3000:]}")

    def stop(self) -> None:
        import signal

        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.log.close()
