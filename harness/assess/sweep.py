"""A sweep's files read once, into one object every assessor is handed: its run records (run.json, or what Hydra
recorded of a damaged one), every epoch of every run as one frame (read through the sweep's metrics cache), its
plan (sweep.json: the jobs, the study's name and what it planned), and each run's other files (probes.json,
target.json, and a study's own, named in its folder's files module), read the first time an assessor asks and kept.
Files only: no TensorFlow.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.config import ramp
from harness.store import layout, probes_file, sweep_file, target_file
from harness.store.files import DamagedFile

ENDED = ("completed", "diverged", "failed", "paused")  # a run that will not run again in this command
from harness.store.layout import METRICS_FILE, RUN_FILE
from harness.store.metrics_cache import read_sweep_metrics
from harness.store.run_files import DONE, config_columns, config_hash, inspect_run, record_config

BATCH = "global_batch_size"  # the batch axis of every reading: all replicas together
DAMAGED = "damaged"  # a run whose run.json or metrics.parquet cannot be read: listed with the reason, run again


@dataclass
class Sweep:
    folder: Path
    records: list[dict]        # every run.json, in job order, with its folder's name as `job`
    epochs: pd.DataFrame       # one row per completed epoch of every run, its run.json joined on (load_epochs)
    plan: dict | None          # sweep.json as written, or None (a sweep made without it, or a damaged one)
    _files: dict = field(default_factory=dict, repr=False)

    @property
    def study(self) -> str | None:
        """The study preset the command named (+study=...), as sweep.json records it; None for the main job, an
        ad-hoc sweep or a sweep recorded before the name was."""
        return (self.plan or {}).get("study")

    @functools.cached_property
    def keys(self) -> list[str]:
        """The config keys of the sweep's runs, in the order run.json lists them."""
        keys: dict[str, None] = {}
        for record in self.records:
            keys.update(dict.fromkeys(config_columns(record.get("config", {}))))
        return list(keys)

    @functools.cached_property
    def not_started(self) -> list[str]:
        return not_started_jobs(self.folder, self.records, self.plan)

    def arms(self, first: dict[str, str]) -> dict[str, str]:
        """Job number -> arm of every job planned so far: round 1's from `first` (what the study's record in
        sweep.json names), a later round's job its own."""
        later = {job["job"]: job["arm"] for job in (self.plan or {}).get("jobs", []) if job.get("arm")}
        return {**first, **later}

    def complete_rounds(self) -> int:
        """The rounds planned so far whose every job has ended (completed, diverged or failed: it will not run
        again in this command), counted from round 1. A job added later (--add-seeds) is of no round: one still
        running holds no round back."""
        plan = self.plan or {}
        ended = self._ended()
        for number in range(1, int(plan.get("rounds", 1)) + 1):
            if any(job["job"] not in ended for job in plan.get("jobs", [])
                   if job.get("round", 1) == number and not job.get("added")):
                return number - 1
        return int(plan.get("rounds", 1))

    def added_seeds(self) -> list[int]:
        """The seeds added after the command (python -m harness.resume --add-seeds) whose every run has ended, in
        order: what a reading reads beside the seeds that judged (an addition still running is read once it has
        ended)."""
        ended = self._ended()
        return [int(seed) for addition in (self.plan or {}).get("added_seeds", [])
                if all(str(job) in ended for job in addition["jobs"]) for seed in addition["seeds"]]

    def _ended(self) -> set[str]:
        return {str(r["job"]) for r in self.records if r.get("status") in ENDED}

    def probes(self, job: str) -> dict | None:
        """The run's probes.json (None without one); raises DamagedFile for one that cannot be read."""
        return self._read(job, probes_file.read)

    def target(self, job: str) -> dict | None:
        """The run's target.json (None without one); raises DamagedFile."""
        return self._read(job, target_file.read)

    def run_file(self, job: str, reader) -> Any:
        """What `reader(run folder)` reads of the run's files (a study's own, say), read once; raises DamagedFile."""
        return self._read(job, reader)

    def _read(self, job: str, reader) -> Any:
        key = (reader, str(job))
        if key not in self._files:
            try:
                self._files[key] = reader(self.folder / str(job))
            except DamagedFile as err:
                self._files[key] = err
        found = self._files[key]
        if isinstance(found, DamagedFile):
            raise found
        return found


def read(folder: Path) -> Sweep:
    """The sweep in `folder`, read once; raises FileNotFoundError when it holds no run."""
    folder = Path(folder)
    records = read_records(folder)
    return Sweep(folder, records, load_epochs(folder, records), sweep_file.read(folder))


def read_records(sweep_dir: Path) -> list[dict]:
    """Every run.json under the sweep (one per run folder), in job order, with its folder name as `job`; a run
    whose run.json or metrics.parquet cannot be read is there with status `damaged` and the reason."""
    records = []
    for run_dir in layout.run_dirs(sweep_dir):
        record, damage = inspect_run(run_dir)
        if damage is not None:
            record = _damaged(sweep_dir, run_dir, record, damage)
        record["job"] = run_dir.name
        records.append(record)
    return records


def _from_hydra(run_dir: Path) -> dict:
    """What Hydra recorded of a run (.hydra/): its task overrides and flat config, for a run whose run.json is
    damaged. Read as plain YAML (safe_load)."""
    import yaml

    def load(name: str):
        try:
            return yaml.safe_load((run_dir / layout.HYDRA_DIR / name).read_text())
        except (OSError, yaml.YAMLError):
            return None

    nested = load(layout.HYDRA_CONFIG) or {}
    flat = {k: v for k, v in nested.items() if not isinstance(v, dict) and k != "hydra"}
    for group in ("dataset", "model"):
        values = dict(nested.get(group) or {})
        if values:
            flat[group] = values.pop("name", None)
            flat.update({f"{group}.{k}": v for k, v in values.items()})
    return {"overrides": load(layout.HYDRA_OVERRIDES) or [], "config": flat}


def _damaged(sweep_dir: Path, run_dir: Path, record: dict | None, damage: str) -> dict:
    record = {**_from_hydra(run_dir), **(record or {}), "status": DAMAGED,
              "error": {"type": "DamagedFile", "message": damage, "traceback": ""}}
    record.setdefault("run_id", f"{Path(sweep_dir).name}/{run_dir.name}")
    return record


def not_started_jobs(sweep_dir: Path, records: list[dict] | None = None, plan: dict | None = None) -> list[str]:
    """Jobs without a run.json: those sweep.json lists whose overrides no run.json records (whatever the run
    folders are named); for a sweep without sweep.json, numbered run folders without a run.json."""
    sweep_dir = Path(sweep_dir)
    plan = sweep_file.read(sweep_dir) if plan is None else plan
    if plan is not None:
        records = read_records(sweep_dir) if records is None else records
        ran = {tuple(record.get("overrides", [])) for record in records}
        # a job's config fingerprint where sweep.json has it: a run resumed with other settings than run config
        # (tracking=mlflow) has other overrides, and is the same run; not for a job that continues a paused run,
        # which shares that run's fingerprint (where it pauses is no part of it)
        configs = {config_hash(record["config"]) for record in records if "config" in record}
        return [job["job"] for job in plan["jobs"] if tuple(job["overrides"]) not in ran
                and (job.get("continues") is not None or job.get("config") not in configs)]
    folders = [p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit() and not (p / RUN_FILE).exists()]
    return sorted((p.name for p in folders), key=int)


def load_epochs(sweep_dir: Path, records: list[dict]) -> pd.DataFrame:
    """One row per completed epoch of every run, with the run's status and timing joined on; every metrics file is
    read in one pass, through the sweep's cache of them (harness.store.metrics_cache).

    A run with no completed epoch (failed early, or still starting) keeps one row with `epoch` missing, so
    it still shows in the runs table. Raises FileNotFoundError when the folder holds no run.
    """
    sweep_dir = Path(sweep_dir)
    if not records:
        raise FileNotFoundError(f"{sweep_dir}: no run folders with {RUN_FILE} found")
    infos, unknown, metrics = [], [], []
    for record in records:
        if "batch_size" not in record.get("config", {}):  # damaged beyond telling which run it was
            unknown.append(f"{record['run_id']}: {(record.get('error') or {}).get('message')}")
            continue
        infos.append((record, _run_info(record)))
        path = sweep_dir / record["job"] / METRICS_FILE
        if record["status"] != DAMAGED and path.exists():
            metrics.append((len(infos) - 1, path))
    if not infos:
        raise FileNotFoundError(f"{sweep_dir}: no run whose files can be read ({'; '.join(unknown)})")
    epochs, owner, unreadable = read_sweep_metrics(sweep_dir, [path for _, path in metrics])
    for index, damage in unreadable.items():  # changed since its run.json was read: damaged after all
        run = metrics[index][0]
        record = _damaged(sweep_dir, sweep_dir / infos[run][0]["job"], infos[run][0], damage)
        infos[run] = (record, _run_info(record))
    info = pd.DataFrame([run_info for _, run_info in infos])
    runs = np.array([metrics[i][0] for i in owner], dtype=np.int64)
    epochs = epochs.drop(columns=[c for c in info.columns if c in epochs.columns])
    epochs = pd.concat([epochs.reset_index(drop=True), info.iloc[runs].reset_index(drop=True)], axis=1)
    with_rows = set(runs.tolist())
    bare = [pd.DataFrame([{**config_columns(record_config(record)), **run_info}])
            for i, (record, run_info) in enumerate(infos) if i not in with_rows]
    order = np.concatenate([runs, [i for i in range(len(infos)) if i not in with_rows]])
    df = pd.concat([epochs, *bare], ignore_index=True) if bare else epochs
    df = df.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)  # job order, each run's epochs in order
    df.attrs["unreadable"] = unknown  # runs with neither a readable run.json nor Hydra's record of them
    if "epoch" not in df.columns:  # no run has finished an epoch yet
        df["epoch"] = float("nan")
    if BATCH not in df.columns:
        df[BATCH] = df["batch_size"]
    df[BATCH] = df[BATCH].fillna(df["batch_size"]).astype(int)
    return _ramps_apart(df)


def _ramps_apart(df: pd.DataFrame) -> pd.DataFrame:
    """A batch_schedule is not a batch size: where a sweep holds one, its runs are read under the schedule's label
    (`batch_schedule` 32→128 (after epoch 2), the fixed batches' `none`), a facet of their own, and every row of a ramp
    stands at its first phase's batch on the batch axis (metrics.parquet keeps each epoch's own)."""
    if "batch_schedule" not in df.columns or not df["batch_schedule"].notna().any():
        return df
    ramps = df["batch_schedule"].notna()
    df.loc[ramps, BATCH] = df[ramps].groupby("run_id", sort=False)[BATCH].transform("first")
    df["batch_schedule"] = df["batch_schedule"].map(ramp.column_label, na_action="ignore").fillna("none")
    return df


def _seconds_between(start: str | None, end: str | None) -> float:
    """Wall time of a finished run; unknown (nan) without an end, since a run still marked running may be dead."""
    if not start or not end:
        return float("nan")
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _run_info(record: dict) -> dict:
    """What run.json says of a run, as columns of each of its rows."""
    error = record.get("error") or {}
    return {
        "run_id": record["run_id"], "job": record["job"], "status": record["status"],
        "epochs_completed": record.get("epochs_completed", 0),
        "started_at": record.get("started_at"), "finished_at": record.get("finished_at"),
        "wall_seconds": _seconds_between(record.get("started_at"), record.get("finished_at")),
        "overrides": " ".join(record.get("overrides", [])),
        "error_type": error.get("type"), "error_message": error.get("message"),
        "target_reached_at_epoch": record.get("target_reached_at_epoch"),
    }


def failed_runs(sweep_dir: Path) -> list[str]:
    """Runs of the sweep whose run.json says failed: the files decide, whichever launcher ran them."""
    return [r.get("run_id", r["job"]) for r in read_records(sweep_dir) if r.get("status") == "failed"]


def unfinished_runs(sweep_dir: Path) -> list[str]:
    """Runs still marked running (another command holds them, or they were killed), damaged, or never started."""
    records = read_records(sweep_dir)
    running = [r.get("run_id", r["job"]) for r in records if r.get("status") in ("running", DAMAGED)]
    return running + [f"{Path(sweep_dir).name}/{job} (not started)"
                      for job in not_started_jobs(sweep_dir, records)] + _rounds_left(sweep_dir)


def runs_left(sweep_dir: Path) -> list[str]:
    """Runs a resume of the sweep runs (again): every run not completed, diverged or paused (failed, interrupted,
    still marked running, damaged) and every planned job not started."""
    records = read_records(sweep_dir)
    left = [r.get("run_id", r["job"]) for r in records if r.get("status") not in DONE]
    return left + [f"{Path(sweep_dir).name}/{job} (not started)" for job in not_started_jobs(sweep_dir, records)] \
        + _rounds_left(sweep_dir)


def _rounds_left(sweep_dir: Path) -> list[str]:
    """A study planned in rounds whose next rounds are not planned yet (a command stopped between two rounds)."""
    return [f"{Path(sweep_dir).name}: round {int(plan.get('rounds', 1)) + 1} on (not planned yet)"
            for plan in [sweep_file.read(sweep_dir)] if sweep_file.more_rounds(plan)]


def run_outcome(run_dir: Path) -> tuple[list[str], list[str]]:
    """(failed, unfinished) for the one run of a single-run command: its run.json decides, as for a sweep."""
    record, damage = inspect_run(run_dir)
    run_id = (record or {}).get("run_id", str(run_dir))
    if record is None or record.get("status") == "failed":
        return [run_id], []
    return [], [run_id] if record.get("status") == "running" or damage else []
