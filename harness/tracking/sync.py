"""A sweep in MLflow from its files: the parent run a command makes before it launches anything, and the check at
the sweep's end (or by `python -m harness.track SWEEP`, afterwards) that every run is there with every epoch and
its final status, which logs whatever the runs could not.

What a run is in MLflow, the same whether it logs itself (harness.tracking.live) or is logged from its files here
(as it trains, by the command's tracking process: harness.launch.tracking_process; at the sweep's end; by
harness.track):
- params: its config as run.json records it, with the training recipe in force (strings as they are, other
  values as JSON);
- tags: `harness.sweep`, `harness.job`, `harness.run_id`, `harness.backend`, `harness.status`, `harness.version`,
  and `mlflow.parentRunId` (the sweep's run);
- metrics, at step = epoch, one log_batch per epoch: every measured column of metrics.parquet (those after
  `epoch`: train_loss, train_acc, train_eval_acc, val_loss, val_acc, the precise-BN columns, noise_scale, lr,
  samples_per_second, ...) and `epoch` itself; a value that is missing or not finite (a diverged epoch's NaN
  loss) is left out. At the end, probes.json's numbers at the last epoch's step, and run.json as an artifact;
- status: run.json's (completed and diverged: FINISHED, the `harness.status` tag saying which; failed: FAILED;
  interrupted: KILLED; running: RUNNING).
"""
from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

import pyarrow.parquet as pq

from harness import __version__
from harness.store import layout, probes_file
from harness.store.files import DamagedFile, read_json, write_json
from harness.tracking.settings import SweepTracking, Tracking, read_sweep, write_sweep

STATUS = {"completed": "FINISHED", "diverged": "FINISHED", "failed": "FAILED", "interrupted": "KILLED",
          "running": "RUNNING", "paused": "FINISHED"}  # paused: a study's rung, continued by a later job
EPOCH_KEY = "epoch"          # the metric whose steps say which epochs a run holds
RUN_TAG = "harness.run_id"   # the tag a sweep's runs are found by
PROBE_NAMES = {"seconds": "probe_seconds"}  # probes.json keys whose bare name would say less among the metrics


class TrackingFailed(RuntimeError):
    """The tracker did not answer or refused; the message is one line."""


def describe(err: BaseException) -> str:
    """An exception in one short line: a connection's failure by its cause (MLflow's own message quotes the
    whole chain of retries)."""
    text = " ".join(str(err).split())
    cause = re.search(r"\[Errno -?\d+\] [^\"')]+", text) or re.search(r"Read timed out|Max retries exceeded", text)
    if cause:
        return f"cannot connect: {cause.group(0).strip()}"
    return f"{type(err).__name__}: {text[:200]}"


def epoch_metrics(row: dict[str, Any]) -> dict[str, float]:
    """The MLflow metrics of one metrics row: `epoch` and every column after it that holds a finite number."""
    keys = list(row)
    start = keys.index(EPOCH_KEY) if EPOCH_KEY in keys else 0
    return {key: float(row[key]) for key in keys[start:] if _finite(row[key])}


def _finite(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def params(config: dict[str, Any]) -> dict[str, str]:
    """run.json's config as MLflow params: strings as they are, everything else as JSON (null, true, [0, 2])."""
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}


def run_tags(record: dict[str, Any]) -> dict[str, str]:
    sweep, _, job = str(record["run_id"]).rpartition("/")
    return {RUN_TAG: record["run_id"], "harness.sweep": sweep, "harness.job": job,
            "harness.backend": str(record.get("config", {}).get("backend", "tensorflow")),
            "harness.status": record["status"], "harness.version": __version__}


def run_name(record: dict[str, Any]) -> str:
    """What the MLflow UI lists the run as: its job number and overrides (`3 batch_size=8 seed=1`)."""
    job = str(record["run_id"]).rpartition("/")[2]
    return " ".join([job, *(o for o in record.get("overrides", []) if not o.startswith(("hydra.", "tracking")))])


def probe_metrics(run_dir: Path) -> dict[str, float]:
    """probes.json's numbers (not its flags), or none when the run has no probes."""
    try:
        values = probes_file.read(run_dir) or {}
    except (DamagedFile, ValueError, OSError):
        return {}
    return {PROBE_NAMES.get(key, key): float(value) for key, value in values.items() if _finite(value)}


def timestamp(iso: str | None) -> float | None:
    return None if not iso else datetime.fromisoformat(iso).timestamp()


def metric_rows(run_dir: Path) -> list[dict[str, Any]]:
    """metrics.parquet's rows (none without the file), as plain Python values."""
    try:
        return pq.read_table(Path(run_dir) / layout.METRICS_FILE).to_pylist()
    except (FileNotFoundError, OSError, ValueError):
        return []


def log_rows(store, run_id: str, rows: Iterable[dict[str, Any]], logged: set[int], queued: bool = False) -> None:
    """The rows whose epoch the run does not hold yet, one log_batch each, in order (`queued`: Store.log_step)."""
    for row in rows:
        epoch = int(row[EPOCH_KEY])
        if epoch not in logged:
            store.log_step(run_id, epoch, epoch_metrics(row), queued=queued)
            logged.add(epoch)


def finish_run(store, run_id: str, run_dir: Path, record: dict[str, Any]) -> None:
    """A finished run's last words: its probes, its status tag, run.json, its MLflow status."""
    status = record["status"]
    if status != "running":
        store.log_step(run_id, int(record.get("epochs_completed") or 0), probe_metrics(run_dir),
                       tags={"harness.status": status})
        store.log_artifact(run_id, Path(run_dir) / layout.RUN_FILE)
    store.set_status(run_id, STATUS[status], end_time=timestamp(record.get("finished_at")))


def open_run(store, experiment_id: str, parent: str | None, record: dict[str, Any], uri: str,
             known: str | None = None, resume_epoch: int | None = None) -> tuple[str, set[int]]:
    """The run's MLflow run (the one run.json names for this store, else `known`, else the one tagged with its
    run_id, else a new one with its params and tags) and the epochs it holds. One that holds epochs past
    `resume_epoch` (an earlier attempt whose files were damaged and thrown away) is deleted for a new one; one that
    lacks params (its tracker stopped between making it and logging them) gets them."""
    entry = record.get("tracking") or {}
    run_id = entry.get("run_id") if entry.get("uri") == uri else None
    if run_id is not None and not store.exists(run_id):
        run_id = None
    run_id = run_id or known or store.find(experiment_id, RUN_TAG, record["run_id"])
    logged: set[int] = set()
    if run_id is not None:
        logged = set(store.steps(run_id, EPOCH_KEY))
        if resume_epoch is not None and logged and max(logged) > resume_epoch:
            store.delete(run_id)
            run_id, logged = None, set()
    wanted = params({**record.get("recipe", {}), **record.get("config", {})})  # the recipe in force, defaults too
    if run_id is None:
        run_id = store.create_run(experiment_id, run_name(record), run_tags(record), parent,
                                  start_time=timestamp(record.get("started_at")))
        store.log_params(run_id, wanted)
    else:  # made by a tracker that stopped before its params
        held = store.params(run_id)
        store.log_params(run_id, {key: value for key, value in wanted.items() if key not in held})
    return run_id, logged


def start_sweep(sweep_dir: Path, tracking: Tracking, live_by: str | None, jobs: int,
                previous: SweepTracking | None = None) -> SweepTracking:
    """The sweep's parent run: the one `previous` (by default tracking.json) names, set RUNNING again, for a resumed
    sweep on the same store, else a new one; tracking.json written either way. Raises TrackingFailed, having
    written a tracking.json that tells the runs not to try."""
    from harness.tracking import mlflow_store

    sweep_dir = Path(sweep_dir)
    previous = read_sweep(sweep_dir) if previous is None else previous
    try:
        store = mlflow_store.store(tracking.uri)
        experiment_id = store.experiment_id(tracking.experiment, tracking.artifacts)
        parent = None
        if previous is not None and (previous.uri, previous.experiment_id) == (tracking.uri, experiment_id):
            parent = previous.parent_run_id if previous.parent_run_id and store.exists(previous.parent_run_id) else None
        if parent is None:
            parent = store.create_run(experiment_id, sweep_dir.name, {
                "harness.sweep": sweep_dir.name, "harness.kind": "sweep", "harness.jobs": str(jobs),
                "harness.version": __version__, "harness.status": "running"})
        else:
            store.set_status(parent, "RUNNING")
            store.set_tags(parent, {"harness.status": "running", "harness.jobs": str(jobs)})
    except Exception as err:
        write_sweep(sweep_dir, SweepTracking(tracking.uri, tracking.experiment, None, None, live_by=None,
                                             artifacts=tracking.artifacts, error=describe(err)))
        raise TrackingFailed(describe(err)) from err
    sweep = SweepTracking(tracking.uri, tracking.experiment, experiment_id, parent, live_by, tracking.artifacts)
    write_sweep(sweep_dir, sweep)
    return sweep


@dataclass(frozen=True)
class Synced:
    runs: int                # runs logged from their files, in part or whole
    live_errors: list[str]   # why runs could not log themselves as they trained (run.json's tracking.error)


def planned_jobs(sweep_dir: Path) -> int:
    """The jobs sweep.json plans, every round of a study planned in rounds so far (0 without one)."""
    try:
        return len((read_json(Path(sweep_dir) / layout.SWEEP_FILE) or {}).get("jobs", []))
    except DamagedFile:
        return 0


def sweep_status(sweep_dir: Path) -> str:
    """The parent run's status from its runs': FAILED if one failed, KILLED if one did not finish (or start),
    else FINISHED."""
    statuses = []
    for run_dir in layout.run_dirs(sweep_dir):
        try:
            statuses.append((read_json(run_dir / layout.RUN_FILE) or {}).get("status"))
        except DamagedFile:
            statuses.append(None)
    planned = planned_jobs(sweep_dir)
    if "failed" in statuses:
        return "FAILED"
    if len(statuses) < planned or any(status not in ("completed", "diverged", "paused") for status in statuses):
        return "KILLED"
    return "FINISHED"


def sync_sweep(sweep_dir: Path, tracking: Tracking | None = None, artifacts: Iterable[Path] = (),
               status: str | None = None) -> Synced:
    """Bring the sweep's MLflow runs up to date with its files; say how many runs needed it, and why runs could
    not log themselves.

    The tracker is the one tracking.json names, or `tracking` (a sweep never tracked, or tracked elsewhere
    before: a parent run is made there). Every run is compared with one query a thousand runs: a run that is
    missing, short of epochs, or whose status differs (a run killed while it was logging, one whose tracker
    failed, every run of a SLURM sweep with a SQLite store) is logged from its files, each epoch it lacks once.
    Then `artifacts` go to the parent run, which ends with `status` (FINISHED, FAILED or KILLED; None leaves it).
    Raises TrackingFailed at the first failure."""
    from harness.tracking import mlflow_store

    sweep_dir = Path(sweep_dir)
    sweep = read_sweep(sweep_dir)
    if tracking is not None and (sweep is None or sweep.uri != tracking.uri or sweep.parent_run_id is None
                                 or tracking.experiment != sweep.experiment):
        sweep = start_sweep(sweep_dir, tracking, live_by=None, jobs=len(layout.run_dirs(sweep_dir)))
    if sweep is None:
        raise TrackingFailed(f"{sweep_dir} has no {layout.TRACKING_FILE}: say where to log it (--uri)")
    if sweep.parent_run_id is None:
        sweep = start_sweep(sweep_dir, sweep.tracking, live_by=None, jobs=len(layout.run_dirs(sweep_dir)))
    try:
        store = mlflow_store.store(sweep.uri)
        children = store.children(sweep.experiment_id, sweep.parent_run_id, RUN_TAG, EPOCH_KEY)
        synced, errors = 0, []
        for run_dir in layout.run_dirs(sweep_dir):
            try:
                record = read_json(run_dir / layout.RUN_FILE)
            except DamagedFile:
                continue
            if (record.get("tracking") or {}).get("error"):
                errors.append(record["tracking"]["error"])
            child = children.get(record["run_id"])
            if child is not None and _up_to_date(child, record, sweep.uri):
                continue
            sync_run(store, sweep, run_dir, record, None if child is None else child.run_id)
            synced += 1
        for path in artifacts:
            if Path(path).exists():
                store.log_artifact(sweep.parent_run_id, Path(path))
        if status is not None:
            # the jobs as planned at the end: a study planned in rounds adds rounds after the parent run started
            jobs = planned_jobs(sweep_dir) or len(layout.run_dirs(sweep_dir))
            store.set_tags(sweep.parent_run_id, {"harness.status": status.lower(), "harness.jobs": str(jobs)})
            store.set_status(sweep.parent_run_id, status)
    except Exception as err:
        raise TrackingFailed(describe(err)) from err
    return Synced(synced, errors)


def _up_to_date(child, record: dict[str, Any], uri: str) -> bool:
    entry = record.get("tracking") or {}
    return (child.status == STATUS[record["status"]] and child.last_epoch == (record.get("epochs_completed") or 0)
            and child.params >= set(record.get("config", {})) and entry.get("uri") == uri
            and entry.get("run_id") == child.run_id and not entry.get("error"))


def sync_run(store, sweep: SweepTracking, run_dir: Path, record: dict[str, Any], known: str | None) -> str:
    """One run logged from its files: what MLflow lacks of it, then its status; run.json keeps the id."""
    run_id, logged = open_run(store, sweep.experiment_id, sweep.parent_run_id, record, sweep.uri, known,
                              resume_epoch=record.get("epochs_completed") or 0)
    log_rows(store, run_id, metric_rows(run_dir), logged)
    finish_run(store, run_id, run_dir, record)
    record["tracking"] = {"uri": sweep.uri, "run_id": run_id}
    write_json(Path(run_dir) / layout.RUN_FILE, record)
    return run_id
