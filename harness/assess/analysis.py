"""A sweep as a frame (`load_sweep`, harness.assess.sweep reading its files once) and what the report computes from
that frame: the keys that vary and split the results into facets, each run's last row, the final results. No
TensorFlow."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from harness.assess.sweep import BATCH, DAMAGED, read  # noqa: F401 (DAMAGED: the status, for the report)

# Config keys that are never facets: the batch axis itself, the seed (averaged over, with n shown), and
# keys that only follow from others.
NOT_FACETS = {"batch_size", "seed", "per_replica_batch", "devices", "epochs_completed"}
# what a choice on the tuning slice reads (+study=tuned's learning rate, +study=recover's recipe): never a validation
# column, so the verdict, which compares validation accuracy, is not chosen on the data it compares
SELECTION_COLUMNS = ["run_id", BATCH, "peak_lr", "seed", "status", "tune_acc", "tune_loss"]
GRID_KEYS = ("lr_factor", "base_lr")  # the keys a learning-rate grid varies (base_lr: `lr` as a column)
RUN_COLUMNS = ["run_id", "job", "status", "epochs_completed", "started_at", "finished_at", "wall_seconds",
               "overrides", "error_type", "error_message", "target_reached_at_epoch"]
RUN_METRICS = ["train_acc", "train_eval_acc", "val_acc", "val_loss"]  # the final epoch's, in the runs table
NOT_STARTED = "not started"


def load_sweep(sweep_dir: Path) -> pd.DataFrame:
    """One row per completed epoch of every run of the sweep in `sweep_dir`, with the run's status and timing joined
    on (harness.assess.sweep.read's `epochs`: every file read once). A run with no completed epoch keeps one row
    with `epoch` missing. Raises FileNotFoundError when the folder holds no run."""
    return read(sweep_dir).epochs


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


def groups(df: pd.DataFrame, keys: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """(label "k=v, ...", its rows) for each combination of `keys`' values, in the frame's order; ("", df) when
    there are no keys. A study read per group (+study=tuned, +study=scaling) reads each apart."""
    if not keys:
        return [("", df)]
    return [(", ".join(f"{k}={v}" for k, v in zip(keys, values if isinstance(values, tuple) else (values,))), frame)
            for values, frame in df.groupby(keys, dropna=False, sort=False)]


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
