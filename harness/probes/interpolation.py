"""Which runs of a sweep the 1-D interpolation (Keskar et al. 2017, Fig. 3) connects, read from files only.

Each pair joins the smallest-batch and the largest-batch solution among completed runs that agree on every
other config value (seed included). harness.run.interpolation evaluates the loss along the line between them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from harness.store import layout
from harness.store.layout import FINAL_WEIGHTS, INTERPOLATION_FILE
from harness.store.run_files import inspect_run

ALPHAS = np.round(np.linspace(-1.0, 2.0, 25), 10)  # α = 0 is the small-batch solution, α = 1 the large-batch one
PAIRED_BY = "batch_size"


@dataclass(frozen=True)
class Pair:
    label: str       # the values that tell this pair from the sweep's other pairs, e.g. "seed=0"
    small: dict      # run.json of the small-batch run (with its folder name as `job`)
    large: dict
    keys: dict       # the config values the two runs share and other pairs differ in

    @property
    def small_dir(self) -> str:
        return self.small["job"]

    @property
    def large_dir(self) -> str:
        return self.large["job"]


def _shared(config: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in config.items() if k != PAIRED_BY))


def pairs(sweep_dir: Path, include_running: bool = False, waiting: Iterable[str] = ()) -> list[Pair]:
    """Every pair of the sweep, in job order of the small-batch run; runs without kept final weights (probes
    off, failed, diverged) take no part. `include_running`: a run still `running` whose final weights are written
    (in its end-of-run probes, which end it completed) takes part too. `waiting`: the folders of runs still
    training: the pairs of their groups are left out (they may change when those runs end), and so is every pair
    while one of them has no readable run.json yet (its group is unknown)."""
    sweep_dir = Path(sweep_dir)
    statuses = ("completed", "running") if include_running else ("completed",)
    waiting = set(waiting)
    runs, unfinished, folders = [], set(), layout.run_dirs(sweep_dir)
    if waiting - {run_dir.name for run_dir in folders}:
        return []  # a waiting run without a run.json yet
    for run_dir in folders:
        record, damage = inspect_run(run_dir)
        if run_dir.name in waiting:
            if damage is not None or not record:
                return []
            unfinished.add(_shared(record["config"]))
        elif damage is None and record and record.get("status") in statuses and (run_dir / FINAL_WEIGHTS).exists():
            runs.append({**record, "job": run_dir.name})
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault(_shared(run["config"]), []).append(run)
    groups = {key: members for key, members in groups.items()
              if len({m["config"][PAIRED_BY] for m in members}) >= 2}
    if not groups:
        return []
    differing = sorted({k for key in groups for k, v in key if len({dict(g)[k] for g in groups}) > 1} | {"seed"})
    found = []
    for key, members in groups.items():
        ordered = sorted(members, key=lambda m: m["config"][PAIRED_BY])
        values = {k: ordered[0]["config"][k] for k in differing if k in ordered[0]["config"]}
        label = ", ".join(f"{k}={v}" for k, v in values.items()) or "all runs"
        if key not in unfinished:
            found.append(Pair(label, ordered[0], ordered[-1], values))
    return sorted(found, key=lambda p: int(p.small_dir) if p.small_dir.isdigit() else p.small_dir)


def needs_update(sweep_dir: Path, include_running: bool = False, waiting: Iterable[str] = ()) -> bool:
    """Whether the sweep has pairs and no interpolation.parquet of exactly those pairs, newer than every paired
    run's final weights (a run that failed or ran again since changes the pairs). With runs `waiting` (pairs():
    some groups left out), whether a pair of the others is missing from it or older than its weights."""
    sweep_dir = Path(sweep_dir)
    found = pairs(sweep_dir, include_running, waiting)
    target = sweep_dir / INTERPOLATION_FILE
    if not found or not target.exists():
        return bool(found)
    held = standing(sweep_dir, found)
    if waiting:
        return len(held) < len(found)
    return len(held) < len(found) or _paired_runs(target) != held


def key(pair: Pair) -> tuple[str, str]:
    """(small_run, large_run): how interpolation.parquet names a pair."""
    return pair.small["run_id"], pair.large["run_id"]


def standing(sweep_dir: Path, found: list[Pair]) -> set[tuple[str, str]]:
    """The pairs of `found` (by key) whose curves interpolation.parquet holds from their runs' present final
    weights: the file is newer than both."""
    target = Path(sweep_dir) / INTERPOLATION_FILE
    try:
        written = target.stat().st_mtime
    except FileNotFoundError:
        return set()
    held = _paired_runs(target) or set()
    return {key(pair) for pair in found if key(pair) in held and written >= max(
        (Path(sweep_dir) / run["job"] / FINAL_WEIGHTS).stat().st_mtime for run in (pair.small, pair.large))}


def _paired_runs(target: Path) -> set[tuple[str, str]] | None:
    """The (small_run, large_run) pairs interpolation.parquet holds; None when it cannot be read."""
    import pandas as pd

    try:
        frame = pd.read_parquet(target, columns=["small_run", "large_run"])
    except Exception:  # pyarrow's errors for a truncated or foreign file vary
        return None
    return set(zip(frame["small_run"], frame["large_run"]))
