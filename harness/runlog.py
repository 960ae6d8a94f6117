"""The files of one run: metrics.parquet (one row per epoch) and run.json (status and provenance).

Both are rewritten atomically (temp file + rename), so a reader or a killed run never sees half a file.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

METRICS_FILE = "metrics.parquet"
RUN_FILE = "run.json"
STATUSES = ("running", "completed", "failed", "diverged", "interrupted")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: Path, obj: Any) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=2, default=str)
            f.write("\n")

    _atomic_write(path, write)


class MetricsTable:
    """Accumulates one row per epoch and rewrites metrics.parquet after each."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / METRICS_FILE
        self.rows: list[dict[str, Any]] = []

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        frame = pd.DataFrame(self.rows)
        _atomic_write(self.path, lambda tmp: frame.to_parquet(tmp, index=False))


class RunRecord:
    """run.json: written with status `running` at start, and again with the outcome at the end."""

    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any], overrides: list[str]):
        self.path = Path(run_dir) / RUN_FILE
        self.data: dict[str, Any] = {
            "run_id": run_id,
            "status": "running",
            "config": config,
            "overrides": list(overrides),
            "started_at": now_iso(),
            "finished_at": None,
            "epochs_completed": 0,
            "error": None,
            "environment": {"python": platform.python_version(), "host": platform.node()},
        }
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
        if error is not None:
            self.data["error"] = {
                "type": type(error).__name__,
                "message": str(error),
                "traceback": "".join(traceback.format_exception(error)),
            }
        write_json(self.path, self.data)
