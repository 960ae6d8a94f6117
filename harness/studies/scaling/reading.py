"""How far does the batch scale (+study=scaling; McCandlish et al. 2018, Shallue et al. 2019): steps to a target
S(B) at each batch size's best learning rate, McCandlish's S = S_min(1 + B_crit/B) fitted to them with a bootstrap
interval, the regime of every batch size, and the gradient noise scale measured at the target against the fit.
Files only: run.json and target.json of runs with target_tune_acc (read as harness.assess.targets counts steps
to a target: a missed run never reached it); the fit, the pooled noise scale and the regimes' thresholds are
harness.studies.scaling.mccandlish's, the sentences words.py's.

The learning rate of a batch size is the one whose seeds all reach the target, in the fewest steps on average: the
target is the tuning slice's accuracy, so validation plays no part in the choice.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from harness.assess import analysis, targets
from harness.assess.analysis import BATCH, GRID_KEYS
from harness.assess.intervals import t_interval
from harness.assess.sweep import Sweep
from harness.probes import noise_scale
from harness.studies.scaling import mccandlish, words
from harness.studies.scaling.mccandlish import NO_GAIN, PERFECT, Fit, Noise, noise_at_target


@dataclass
class Point:
    batch: int
    grid: list[float]             # the learning rates tried
    lr: float | None = None       # the chosen one; None when no learning rate got every seed to the target
    steps: float | None = None    # S(B): mean steps to target over the chosen learning rate's seeds
    steps_range: tuple[float, float] | None = None
    samples: float | None = None  # E(B): mean samples to target
    seeds: int = 0
    resolution: float | None = None  # the coarsest target_resolution among those runs
    val_acc: float | None = None  # mean validation accuracy where they reached the target
    val_interval: tuple[float, float] | None = None
    noise: float | None = None    # B_simple there, pooled over those runs (None: |G|² not positive)
    ratio: float | None = None    # S(B) / S(previous batch size)
    regime: str | None = None     # "perfect scaling", "diminishing returns" or "no gain"; None for the first
    edge: str | None = None       # "smallest" or "largest" when the chosen learning rate is at that end of the grid


@dataclass
class Scaling:
    target: float
    tune_size: int | None
    points: list[Point]
    runs: pd.DataFrame            # one row per finished run: batch, peak_lr, seed, status, steps, samples, ...
    fit: Fit | None
    noise: Noise
    lines: list[str] = field(default_factory=list)
    group: str = ""               # the other varied keys' values its runs share ("optimizer=lamb"; "" when none)

    @property
    def measured(self) -> list[Point]:
        return [p for p in self.points if p.steps is not None]

    @property
    def headline(self) -> str:
        """The section in one sentence, for the report's verdict."""
        return words.headline(self)


def assess(sweep: Sweep, df: pd.DataFrame, facets: list[str] = ()) -> list[Scaling]:
    """One curve and fit per combination of the varied keys but the grid's (`+study=scaling optimizer=adam,lamb -m`:
    B_crit per optimizer); none where the runs had no target_tune_acc or swept fewer than two batch sizes."""
    others = [k for k in facets if k not in GRID_KEYS]
    read = [_assess_group(sweep, frame, group) for group, frame in analysis.groups(df, others)]
    return [one for one in read if one is not None]


def _assess_group(sweep: Sweep, df: pd.DataFrame, group: str) -> Scaling | None:
    if "target_tune_acc" not in df.columns or df["target_tune_acc"].isna().all() or df[BATCH].nunique() < 2:
        return None
    if (runs := targets.runs(sweep, df)).empty:
        return None
    target = float(df["target_tune_acc"].dropna().iloc[0])
    sizes = df["tune_size"].dropna() if "tune_size" in df.columns else pd.Series(dtype=float)
    points = choose(runs)
    _regimes(points)
    fit = fit_bootstrap(runs, points)
    chosen = runs[[(b, lr) in {(p.batch, p.lr) for p in points} for b, lr in zip(runs[BATCH], runs["peak_lr"])]]
    noise = noise_at_target([g for g in chosen["gram"] if g is not None], _noise_batch(chosen))
    for point in points:
        mine = chosen[chosen[BATCH] == point.batch]
        if point.steps is not None:
            alone = noise_at_target([g for g in mine["gram"] if g is not None], _noise_batch(mine), bootstrap=0)
            point.noise = alone.value
    found = Scaling(target, int(sizes.iloc[0]) if len(sizes) else None, points, runs, fit, noise, group=group)
    found.lines = words.lines(found)
    return found


def _noise_batch(runs: pd.DataFrame) -> int:
    batches = runs["noise_batch"].dropna()
    return int(batches.iloc[0]) if len(batches) else noise_scale.SMALL_BATCH


def choose(runs: pd.DataFrame) -> list[Point]:
    """Every batch size's point: the learning rate whose seeds all reached the target in the fewest mean steps."""
    points = []
    for batch, by_lr in sorted(targets.cells(runs).items()):
        grid = sorted(by_lr)
        point = Point(batch, grid)
        chosen = targets.fewest(by_lr)
        if chosen is not None:
            best, point.steps = chosen
            mine = runs[(runs[BATCH] == batch) & (runs["peak_lr"] == best)]
            point.lr, point.seeds = best, len(mine)
            point.steps_range = (float(mine["steps"].min()), float(mine["steps"].max()))
            point.samples = float(mine["samples"].astype(float).mean())
            point.resolution = float(mine["resolution"].astype(float).max())
            accuracies = mine["val_acc"].astype(float).dropna().to_numpy()
            point.val_acc = float(accuracies.mean()) if len(accuracies) else None
            point.val_interval = t_interval(accuracies) if len(accuracies) > 1 else None
            if len(grid) > 1 and best in (grid[0], grid[-1]):
                point.edge = "smallest" if best == grid[0] else "largest"
        points.append(point)
    return points


def _regimes(points: list[Point]) -> None:
    """Each measured batch size against the one before it: perfect scaling when S fell in proportion to B
    (within PERFECT), no gain when it fell by less than NO_GAIN, diminishing returns between."""
    measured = [p for p in points if p.steps is not None]
    for before, point in zip(measured, measured[1:]):
        point.ratio = point.steps / before.steps
        proportional = before.batch / point.batch  # 0.5 for a doubling
        if point.ratio <= proportional * (1 + PERFECT):
            point.regime = "perfect scaling"
        elif point.ratio >= 1 / (1 + NO_GAIN):
            point.regime = "no gain"
        else:
            point.regime = "diminishing returns"


def fit_bootstrap(runs: pd.DataFrame, points: list[Point], replicates: int = mccandlish.BOOTSTRAP) -> Fit | None:
    """McCandlish's curve fitted to the measured points, its interval from the runs' seeds (mccandlish.fit)."""
    measured = [p for p in points if p.steps is not None]
    return mccandlish.fit(targets.cells(runs), [p.batch for p in measured], [p.steps for p in measured], replicates)
