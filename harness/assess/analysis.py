"""Read a sweep's files into one tidy DataFrame and compute what the report says. Files only: no TensorFlow."""
from __future__ import annotations

import re
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from harness.store import layout
from harness.store.files import DamagedFile, read_json
from harness.store.layout import METRICS_FILE, RUN_FILE, SWEEP_FILE
from harness.store.metrics_cache import read_sweep_metrics
from harness.store.run_files import config_columns, config_hash, inspect_run

BATCH = "global_batch_size"
# Config keys that are never facets: the batch axis itself, the seed (averaged over, with n shown), and
# keys that only follow from others.
NOT_FACETS = {"batch_size", "seed", "per_replica_batch", "devices", "epochs_completed"}
RUN_COLUMNS = ["run_id", "job", "status", "epochs_completed", "started_at", "finished_at", "wall_seconds",
               "overrides", "error_type", "error_message", "target_reached_at_epoch"]
RUN_METRICS = ["train_acc", "train_eval_acc", "val_acc", "val_loss"]  # the final epoch's, in the runs table
NOT_STARTED = "not started"


DAMAGED = "damaged"  # a run whose run.json or metrics.parquet cannot be read: listed with the reason, run again


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


_snapshots: dict[Path, list[dict]] = {}  # sweep folder -> its run records, while a snapshot of it is held


@contextmanager
def snapshot(sweep_dir: Path):
    """Within: read_run_records(sweep_dir) is read once and served from memory, so that everything a report says
    comes from one reading of the runs (and a sweep of thousands is not read again for every section)."""
    key = Path(sweep_dir).resolve()
    held = key in _snapshots
    if not held:
        _snapshots[key] = _read_run_records(Path(sweep_dir))
    try:
        yield
    finally:
        if not held:
            del _snapshots[key]


def read_run_records(sweep_dir: Path) -> list[dict]:
    """Every run.json under the sweep (one per run folder), in job order, with its folder name as `job`; a run
    whose run.json or metrics.parquet cannot be read is there with status `damaged` and the reason."""
    held = _snapshots.get(Path(sweep_dir).resolve())
    return held if held is not None else _read_run_records(Path(sweep_dir))


def _read_run_records(sweep_dir: Path) -> list[dict]:
    records = []
    for run_dir in layout.run_dirs(sweep_dir):
        record, damage = inspect_run(run_dir)
        if damage is not None:
            record = _damaged(sweep_dir, run_dir, record, damage)
        record["job"] = run_dir.name
        records.append(record)
    return records


def _damaged(sweep_dir: Path, run_dir: Path, record: dict | None, damage: str) -> dict:
    record = {**_from_hydra(run_dir), **(record or {}), "status": DAMAGED,
              "error": {"type": "DamagedFile", "message": damage, "traceback": ""}}
    record.setdefault("run_id", f"{Path(sweep_dir).name}/{run_dir.name}")
    return record


def _seconds_between(start: str | None, end: str | None) -> float:
    """Wall time of a finished run; unknown (nan) without an end, since a run still marked running may be dead."""
    if not start or not end:
        return float("nan")
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def not_started_jobs(sweep_dir: Path) -> list[str]:
    """Jobs without a run.json: those sweep.json lists whose overrides no run.json records (whatever the run
    folders are named); for a sweep without sweep.json, numbered run folders without a run.json."""
    sweep_dir = Path(sweep_dir)
    try:
        sweep = read_json(sweep_dir / SWEEP_FILE)
    except DamagedFile:
        sweep = None  # count the run folders instead
    if sweep is not None:
        records = read_run_records(sweep_dir)
        ran = {tuple(record.get("overrides", [])) for record in records}
        # a job's config fingerprint where sweep.json has it: a run resumed with other settings than run config
        # (tracking=mlflow) has other overrides, and is the same run
        configs = {config_hash(record["config"]) for record in records if "config" in record}
        return [job["job"] for job in sweep["jobs"]
                if tuple(job["overrides"]) not in ran and job.get("config") not in configs]
    folders = [p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit() and not (p / RUN_FILE).exists()]
    return sorted((p.name for p in folders), key=int)


def load_sweep(sweep_dir: Path) -> pd.DataFrame:
    """One row per completed epoch of every run, with the run's status and timing joined on; every metrics file is
    read in one pass, through the sweep's cache of them (harness.store.metrics_cache).

    A run with no completed epoch (failed early, or still starting) keeps one row with `epoch` missing, so
    it still shows in the runs table. Raises FileNotFoundError when the folder holds no run.
    """
    sweep_dir = Path(sweep_dir)
    records = read_run_records(sweep_dir)
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
    bare = [pd.DataFrame([{**config_columns(record.get("config", {})), **run_info}])
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
    return df


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
    return [r.get("run_id", r["job"]) for r in read_run_records(sweep_dir) if r.get("status") == "failed"]


def unfinished_runs(sweep_dir: Path) -> list[str]:
    """Runs still marked running (another command holds them, or they were killed), damaged, or never started."""
    running = [r.get("run_id", r["job"]) for r in read_run_records(sweep_dir) if r.get("status") in ("running",
                                                                                                     DAMAGED)]
    return running + [f"{Path(sweep_dir).name}/{job} (not started)" for job in not_started_jobs(sweep_dir)]


def run_outcome(run_dir: Path) -> tuple[list[str], list[str]]:
    """(failed, unfinished) for the one run of a single-run command: its run.json decides, as for a sweep."""
    record, damage = inspect_run(run_dir)
    run_id = (record or {}).get("run_id", str(run_dir))
    if record is None or record.get("status") == "failed":
        return [run_id], []
    return [], [run_id] if record.get("status") == "running" or damage else []


def config_keys(sweep_dir: Path) -> list[str]:
    """The config keys of the sweep's runs, in the order run.json lists them."""
    keys: dict[str, None] = {}
    for record in read_run_records(sweep_dir):
        keys.update(dict.fromkeys(config_columns(record.get("config", {}))))
    return list(keys)


def varied_keys(df: pd.DataFrame, keys: list[str]) -> list[str]:
    """Config keys that take more than one value across the sweep's runs."""
    per_run = df.drop_duplicates("run_id")
    # str of each value: a key null in some runs and set in others varies (astype(str) can keep None as NaN)
    return [k for k in keys if k in per_run.columns and per_run[k].map(str).nunique() > 1]


def facet_keys(df: pd.DataFrame, keys: list[str]) -> list[str]:
    """Varied keys other than batch size and seed: results are split by these, never averaged over them."""
    return [k for k in varied_keys(df, keys) if k not in NOT_FACETS]


def facet_order(labels) -> list[str]:
    """The distinct facet labels, numbers in them compared as numbers ('lr_factor=2.15' before 'lr_factor=10')."""
    def key(label: str):
        parts = re.split(r"((?:(?<==)-)?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)", str(label))
        return [(0, float(p), "") if i % 2 else (1, 0.0, p) for i, p in enumerate(parts)]

    return sorted(pd.unique(pd.Series(list(labels))), key=key)


def facet_label(row: pd.Series | dict, facets: list[str]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in facets) if facets else "all runs"


ARM_GROUPS = ("cause", "control", "hoffer")  # config groups whose options are a study's arms (conf/<group>/)


def arm(overrides: str) -> str | None:
    """The study arm a run belongs to, from its overrides (`+cause=imbalance` -> 'imbalance'), or None."""
    arms = [token.split("=", 1)[1] for token in str(overrides).split()
            if token.lstrip("+~").split("=", 1)[0] in ARM_GROUPS and "=" in token]
    return " + ".join(arms) or None


def num_classes(df: pd.DataFrame) -> int:
    """Number of classes: the runs' `num_classes` column, else the per-class recall columns (10 when a sweep
    predates both)."""
    if "num_classes" in df.columns and df["num_classes"].notna().any():
        return int(df["num_classes"].max())
    return sum(str(c).startswith("val_recall_") for c in df.columns) or 10


def runs_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its status and timing, with the final epoch's metrics where there is one."""
    last = df.sort_values("epoch").groupby("run_id", sort=False).tail(1).set_index("run_id")
    order = df.drop_duplicates("run_id")["run_id"]
    table = last.loc[order].reset_index()
    for column in RUN_METRICS:  # NaN when no run has finished an epoch yet
        if column not in table.columns:
            table[column] = float("nan")
    return table[[*RUN_COLUMNS, BATCH, *RUN_METRICS]]


def final_results(df: pd.DataFrame) -> pd.DataFrame:
    """One row per completed run: the final epoch's metrics plus the best epoch's validation accuracy."""
    done = df[(df["status"] == "completed") & df["epoch"].notna()]
    if done.empty:
        return done.assign(best_val_acc=pd.Series(dtype=float), best_epoch=pd.Series(dtype=float))
    grouped = done.groupby("run_id", sort=False)
    final = done.loc[grouped["epoch"].idxmax()].set_index("run_id")
    best = done.loc[grouped["val_acc"].idxmax()].set_index("run_id")
    final["best_val_acc"] = best["val_acc"]
    final["best_epoch"] = best["epoch"]
    final["gap"] = final["train_eval_acc"] - final["val_acc"]
    return final.reset_index()
