"""The files of one run: metrics.parquet (one row per epoch) and run.json (status and provenance).

Both are rewritten atomically (harness.store.files), so a reader or a killed run never sees half a file. The metrics
columns of a run's config are named here, once, for the writer (run) and the reader (analysis).
"""
from __future__ import annotations

import hashlib
import json
import platform
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as fs
import pyarrow.parquet as pq

from harness.store.files import DamagedFile, atomic_write, read_json, write_json
from harness.store.layout import METRICS_FILE, RUN_FILE

STATUSES = ("running", "completed", "failed", "diverged", "interrupted", "paused")
FINISHED = ("completed", "diverged")  # results: what a reading reads as a run of its epochs
DONE = (*FINISHED, "paused")  # a resumed sweep leaves these alone (a paused run stopped at its pause_epoch, and a
# later job continues it from a copy: fork)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def recorded_config(flat_config: dict[str, Any]) -> dict[str, Any]:
    """A run's flat config as run.json holds it (JSON types: tuples become lists), for comparing with a record."""
    return json.loads(json.dumps(flat_config))


def config_hash(flat_config: dict[str, Any]) -> str:
    """A short fingerprint of a run's flat config (as run.json records it): sweep.json keeps one per job, so a
    resumed sweep knows its folder holds this command's runs without reading every run.json."""
    text = json.dumps(recorded_config(flat_config), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record_config(record: dict[str, Any]) -> dict[str, Any]:
    """A run.json's config with the training recipe in force (`recipe`, which the config leaves out at its defaults):
    the same keys its metrics rows hold."""
    return {**(record.get("recipe") or {}), **(record.get("config") or {})}


def config_columns(flat_config: dict[str, Any]) -> dict[str, Any]:
    """A run's flat config as metrics columns: `lr` is `base_lr` there (the `lr` column is the learning rate in
    effect at each epoch) and a list (`devices`, `dataset.image_size`) a string like '0,2' (a column of one type),
    a list of pairs (`batch_schedule`) one like '0:32,2:128'."""
    def text(value) -> str:
        return ",".join(":".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v) for v in value)

    columns = {k: text(v) if isinstance(v, (list, tuple)) else v  # one type per column
               for k, v in flat_config.items() if k != "lr"}
    if "lr" in flat_config:
        columns["base_lr"] = flat_config["lr"]
    return columns


def final_val_acc(run_dir: Path) -> float:
    """The last recorded epoch's val_acc (NaN before the first epoch): the run's tracked metric."""
    metrics = Path(run_dir) / METRICS_FILE
    if not metrics.exists():
        return float("nan")
    values = pd.read_parquet(metrics, columns=["val_acc"])["val_acc"]
    return float(values.iloc[-1]) if len(values) else float("nan")


def read_metrics(paths: list[Path]) -> tuple[pd.DataFrame, np.ndarray, dict[int, str]]:
    """Every row of these metrics.parquet files in one pass: pyarrow's dataset reader unifies their schemas and
    reads them on every core, in C++ (a column a file lacks is empty in its rows; 10,000 files of a sweep in a
    fraction of the time one pandas read each takes). (The rows in the order of `paths`, each row's index into
    `paths`, why each unreadable file could not be read, by index.)"""
    table, rows, unreadable = read_metrics_table(paths)
    return table.to_pandas(), rows, unreadable


def read_metrics_table(paths: list[Path]) -> tuple[pa.Table, np.ndarray, dict[int, str]]:
    """read_metrics, as the Arrow table it reads."""
    if not paths:
        return pa.table({}), np.zeros(0, dtype=np.int64), {}
    names = [str(path) for path in paths]
    try:
        factory = ds.FileSystemDatasetFactory(fs.LocalFileSystem(), names, ds.ParquetFileFormat())
        schema = factory.inspect(promote_options="permissive")
        table = factory.finish(schema).to_table(columns=[*schema.names, "__filename"])
    except Exception:  # a file that is not whole parquet: find it, read the rest
        return _read_one_by_one(paths)
    index = {name: i for i, name in enumerate(names)}
    rows = np.array([index[name] for name in table.column("__filename").to_pylist()], dtype=np.int64)
    return table.drop_columns(["__filename"]), rows, {}


def _read_one_by_one(paths: list[Path]) -> tuple[pa.Table, np.ndarray, dict[int, str]]:
    tables, rows, unreadable = [], [], {}
    for index, path in enumerate(paths):
        try:
            tables.append(pq.read_table(path))
        except Exception as err:  # pyarrow's errors for a truncated or foreign file vary
            unreadable[index] = f"{path} cannot be read ({type(err).__name__}: {err})"
            continue
        rows += [index] * tables[-1].num_rows
    table = pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})
    return table, np.array(rows, dtype=np.int64), unreadable


def inspect_run(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(run.json's record or None, why the run's files are damaged or None): a run.json or metrics.parquet that
    exists but cannot be read (truncated by a full disk or a crash during a copy) is damaged."""
    try:
        record = read_json(Path(run_dir) / RUN_FILE)
    except DamagedFile as err:
        return None, str(err)
    metrics = Path(run_dir) / METRICS_FILE
    problem = _not_parquet(metrics)
    if problem is not None:
        return record, f"{metrics} cannot be read ({problem})"
    return record, None


def _not_parquet(path: Path) -> str | None:
    """Why `path` is no whole parquet file (None when it is, or does not exist): a parquet file ends in its footer,
    the footer's length and the magic bytes PAR1, so a file cut short (a full disk, a kill during a copy) or a
    foreign one shows in its last 8 bytes and its size, without parsing it (0.02 ms, where reading the footer
    takes 0.4 ms: a sweep of 10,000 runs is checked in a fraction of a second)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            if size < 12:
                return f"{size} bytes: no parquet file"
            f.seek(size - 8)
            tail = f.read(8)
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    footer = int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1" or footer + 12 > size:
        return "it does not end in a parquet footer: cut short, or not a parquet file"
    return None


def is_finished(run_dir: Path) -> bool:
    """Completed, diverged or paused, with its files intact: a resumed sweep leaves such a run alone."""
    record, damage = inspect_run(run_dir)
    return damage is None and record is not None and record.get("status") in DONE


def run_result(run_dir: Path) -> float | None:
    """What a run returns to Hydra: its final val_acc once it completed or diverged, None otherwise (failed,
    interrupted, damaged), as the in-process task function does."""
    return final_val_acc(run_dir) if is_finished(run_dir) else None


def _reset_peak_memory() -> None:
    """Start this process's peak-memory count afresh (Linux), so a warm worker's runs each report their own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_memory_mb() -> float | None:
    """This process's peak resident memory since the run started (VmHWM; elsewhere the process's lifetime peak)."""
    try:
        status = Path("/proc/self/status").read_text()
        return round(int(status.split("VmHWM:")[1].split()[0]) / 1024, 1)
    except (OSError, IndexError, ValueError):
        pass
    try:
        import resource

        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # kilobytes on Linux
    except (ImportError, OSError):
        return None


class MetricsTable:
    """Accumulates one row per epoch and rewrites metrics.parquet after each.

    `keep_epochs` > 0 continues a resumed run: the first that many rows already on disk are kept.
    """

    def __init__(self, run_dir: Path, keep_epochs: int = 0):
        self.path = Path(run_dir) / METRICS_FILE
        self.rows: list[dict[str, Any]] = []
        if keep_epochs and self.path.exists():
            kept = pd.read_parquet(self.path)
            self.rows = kept[kept["epoch"] <= keep_epochs].to_dict("records")

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        frame = pd.DataFrame(self.rows)
        atomic_write(self.path, lambda tmp: frame.to_parquet(tmp, index=False))


class RunRecord:
    """run.json: written with status `running` at start, and again with the outcome at the end."""

    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any], overrides: list[str],
                 resumed_from_epoch: int | None = None, previous: dict[str, Any] | None = None,
                 notes: list[str] = ()):
        self.path = Path(run_dir) / RUN_FILE
        self.data: dict[str, Any] = {
            "run_id": run_id,
            "status": "running",
            "config": config,
            "overrides": list(overrides),
            "started_at": now_iso(),
            "finished_at": None,
            "epochs_completed": resumed_from_epoch or 0,
            "resumed_from_epoch": resumed_from_epoch,
            "error": None,
            "environment": {"python": platform.python_version(), "host": platform.node()},
        }
        _reset_peak_memory()
        self._started = time.perf_counter()
        notes = [*(previous or {}).get("notes", []), *notes]  # earlier attempts' notes stay: the run's history
        if notes:  # what happened to earlier attempts (requeues, damaged files)
            self.data["notes"] = list(dict.fromkeys(notes))
        if (previous or {}).get("tracking"):  # the run's MLflow run, which a resumed run continues
            self.data["tracking"] = previous["tracking"]
        if resumed_from_epoch is not None and previous:
            self.data["started_at"] = previous.get("started_at") or self.data["started_at"]
            self.data["resumed_at"] = now_iso()
        write_json(self.path, self.data)

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        write_json(self.path, self.data)

    def set_environment(self, **fields: Any) -> None:
        self.data["environment"].update(fields)
        write_json(self.path, self.data)

    def finish(self, status: str, error: BaseException | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        self.data["status"] = status
        self.data["finished_at"] = now_iso()
        self.data["peak_memory_mb"] = _peak_memory_mb()
        self.data["run_seconds"] = round(time.perf_counter() - self._started, 3)  # this attempt, set-up to the end
        if error is not None:
            self.data["error"] = {
                "type": type(error).__name__,
                "message": str(error),
                "traceback": "".join(traceback.format_exception(error)),
            }
        write_json(self.path, self.data)
