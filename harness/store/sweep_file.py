"""sweep.json, a sweep's plan: every job the command runs, written before any of them starts, read by the harness's
Hydra sweeper and launchers (which run it as it is), by a resume (which compares each job's config fingerprint) and
by the report (which runs have not started).

    {"format": 2, "study": "diagnose",                 # the study preset the command named (+study=...), or null
     "jobs": [{"job": "0", "round": 1,                  # a study that plans in rounds appends later rounds' jobs
               "overrides": ["batch_size=8", ...],      # the job's task overrides, as its run records them
               "config": "051f473c36965e7b",            # its RunConfig's fingerprint (run_files.config_hash)
               "gpus": 0, "devices": null, "simulate_devices": false, "backend": "tensorflow",
               "epochs": 5},                            # what its launcher needs, so nothing composes a job again
              ...],
     "diagnose": {...}}                                 # what the study planned beside the jobs (its own key)

A sweep.json of format 1 (before 2026-12) has only each job's `job`, `overrides` and `config`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.store.files import DamagedFile, read_json, write_json
from harness.store.layout import SWEEP_FILE

FORMAT = 2


@dataclass(frozen=True)
class PlannedJob:
    job: str                              # its number, the run folder's name
    overrides: list[str]
    config: str                           # its config's fingerprint
    round: int = 1
    gpus: int = 0
    devices: list[int] | None = None
    simulate_devices: bool = False
    backend: str = "tensorflow"
    epochs: int = 1                       # epochs it will train (a step budget decides them from the batch size)

    @property
    def num(self) -> int:
        return int(self.job)


def record(jobs: list[PlannedJob], study: str | None, planned: dict[str, Any]) -> dict[str, Any]:
    """sweep.json's content: `study` the preset's name, `planned` what the study planned beside the jobs."""
    return {"format": FORMAT, "study": study, "jobs": [asdict(job) for job in jobs], **planned}


def write(sweep_dir: Path, content: dict[str, Any]) -> None:
    """sweep.json (record's), atomically."""
    write_json(Path(sweep_dir) / SWEEP_FILE, content)


def read(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep's sweep.json as written, or None without one (or a damaged one)."""
    try:
        return read_json(Path(sweep_dir) / SWEEP_FILE)
    except DamagedFile:
        return None


def planned_jobs(sweep_dir: Path) -> list[PlannedJob] | None:
    """Every job of the sweep's plan, or None where there is none a launcher can run as it is (no sweep.json, a
    damaged one, or one of format 1)."""
    sweep = read(sweep_dir)
    if sweep is None or sweep.get("format", 1) < 2:
        return None
    return [PlannedJob(**job) for job in sweep["jobs"]]


def config_hashes(sweep_dir: Path) -> dict[str, str]:
    """Job number -> config fingerprint, from the sweep's sweep.json (empty without one)."""
    return {job["job"]: job["config"] for job in (read(sweep_dir) or {}).get("jobs", []) if "config" in job}
