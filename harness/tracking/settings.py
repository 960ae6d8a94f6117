"""`tracking=mlflow`'s settings (conf/tracking/mlflow.yaml), validated, and the sweep's tracking.json.

`tracking.*` is no run's config: a sweep made without tracking resumes with it, and the other way round. The
default store is SQLite in the sweep folder's parent (sweeps/mlflow.db, MLflow's `sqlite:///` form), with the
artifacts beside it (sweeps/mlartifacts), so tracking works offline with nothing running.
"""
from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.fields import ConfigError, check_keys
from harness.store import layout
from harness.store.files import DamagedFile, read_json, write_json

KEYS = {"uri", "experiment", "nice"}
NICE = range(0, 20)  # a process's niceness: 0 (as the runs) to 19 (the lowest priority)
SCHEMES = ("sqlite:///", "http://", "https://", "postgresql://", "postgresql+", "mysql://", "mysql+", "mssql://",
           "file://", "databricks")


@dataclass(frozen=True)
class Tracking:
    """Where a sweep's runs are tracked. `artifacts`: the artifact root a new experiment gets (the default store's
    sweeps/mlartifacts); None lets the tracking server choose. `nice`: the tracking process's priority while the
    runs train (harness.launch.tracking_process)."""
    uri: str
    experiment: str
    artifacts: str | None = None
    nice: int = 19

    @property
    def local_database(self) -> bool:
        """A SQLite file: runs on other machines (SLURM) must not write to it (often on NFS)."""
        return self.uri.startswith("sqlite:")


def from_dict(cfg: dict[str, Any], sweep_dir: Path) -> Tracking:
    """The composed `tracking` node, validated, for the sweep (or single run's) folder `sweep_dir`: its defaults
    resolved to absolute paths, so that every run process, wherever it starts, finds the same store."""
    check_keys(cfg, KEYS, "tracking.")
    if importlib.util.find_spec("mlflow") is None:
        raise ConfigError("tracking", "mlflow", "none (leave it out), or install MLflow first: "
                          "pip install -e \".[mlflow]\"")
    uri, experiment = cfg.get("uri"), cfg.get("experiment")
    if uri is not None and (not isinstance(uri, str) or not uri.startswith(SCHEMES)):
        raise ConfigError("tracking.uri", uri, "null (SQLite in the sweeps folder: sweeps/mlflow.db), a server "
                          "http://HOST:PORT, or an MLflow tracking URI (sqlite:///PATH, postgresql://...)")
    if experiment is not None and (not isinstance(experiment, str) or not experiment.strip()):
        raise ConfigError("tracking.experiment", experiment, "null (the sweep's folder name) or a non-empty name")
    nice = cfg.get("nice", 19)
    if isinstance(nice, bool) or not isinstance(nice, int) or nice not in NICE:
        raise ConfigError("tracking.nice", nice, "an integer from 0 (MLflow keeps up with the runs, taking CPU time "
                          "from them) to 19 (only the CPU time they leave idle)")
    sweep_dir = Path(sweep_dir).resolve()
    if uri is None:
        return Tracking(uri=f"sqlite:///{sweep_dir.parent / layout.MLFLOW_DB}", experiment=experiment or sweep_dir.name,
                        artifacts=(sweep_dir.parent / layout.MLFLOW_ARTIFACTS).as_uri(), nice=nice)
    return Tracking(uri=uri, experiment=experiment or sweep_dir.name, nice=nice)


# who logs a sweep's runs as they train (tracking.json's `live_by`): the command's tracking process, from their
# files (the harness launcher); each run itself (a launcher the harness does not drive, SLURM with a server); null:
# nobody (SLURM with a SQLite store, often on NFS, or a tracker the command could not reach). The sweep's end logs
# whatever is missing.
LIVE_BY = ("command", "run")


@dataclass(frozen=True)
class SweepTracking:
    """tracking.json in a sweep folder: where the command tracks the sweep, its parent run, and who logs the runs
    as they train (LIVE_BY)."""
    uri: str
    experiment: str
    experiment_id: str | None
    parent_run_id: str | None
    live_by: str | None
    artifacts: str | None = None
    error: str | None = None  # why the command could not reach the tracker (then no run tries)
    ready: bool = True        # False while the command is still making the parent run: the runs wait for it

    @property
    def tracking(self) -> Tracking:
        return Tracking(self.uri, self.experiment, self.artifacts)


def read_sweep(sweep_dir: Path) -> SweepTracking | None:
    """The sweep folder's tracking.json, or None without one (or a damaged one)."""
    try:
        data = read_json(Path(sweep_dir) / layout.TRACKING_FILE)
    except DamagedFile:
        return None
    if not data:
        return None
    fields = {key: data.get(key) for key in SweepTracking.__dataclass_fields__}
    fields["live_by"] = fields["live_by"] if fields["live_by"] in LIVE_BY else None
    fields["ready"] = data.get("ready", True) is not False
    return SweepTracking(**fields)


def write_sweep(sweep_dir: Path, sweep: SweepTracking) -> None:
    write_json(Path(sweep_dir) / layout.TRACKING_FILE, asdict(sweep))
