"""How far does the batch scale (+study=scaling; McCandlish et al. 2018, Shallue et al. 2019): steps to a target
S(B) at each batch size's best learning rate, McCandlish's S = S_min(1 + B_crit/B) fitted to them with a bootstrap
interval, the regime of every batch size, and the gradient noise scale measured at the target against the fit.
Files only: run.json and target.json of runs with target_tune_acc; the fit and the pooled noise scale are
harness.studies.scaling.mccandlish's.

The learning rate of a batch size is the one whose seeds all reach the target, in the fewest steps on average: the
target is the tuning slice's accuracy, so validation plays no part in the choice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.assess import analysis
from harness.assess.analysis import BATCH, GRID_KEYS
from harness.assess.intervals import t_interval
from harness.assess.sweep import Sweep
from harness.probes import noise_scale
from harness.store.files import DamagedFile
from harness.studies.scaling import mccandlish
from harness.studies.scaling.mccandlish import BOOTSTRAP, FIT_TOLERANCE, LEVEL, Fit, Noise, noise_at_target

PERFECT = 0.2         # "perfect scaling": S(2B) within 20% of S(B)/2
NO_GAIN = 0.2         # "no gain": S(2B) within 20% of S(B) or above
RESOLUTION = 0.1      # steps to target resolved to 10% of their value


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
        measured, fit, noise = self.measured, self.fit, self.noise
        if len(measured) < 3 or fit is None:
            return (f"Too few batch sizes reached tune_acc {self.target:g} ({len(measured)} of {len(self.points)}) "
                    "to fit a critical batch size.")
        perfect = [p.batch for p in measured if p.regime == "perfect scaling"]
        none = [p.batch for p in measured if p.regime == "no gain"]
        where = (f"perfect scaling up to batch {perfect[-1]}" if perfect else "no perfect scaling") + (
            f", no gain from a larger batch at batch {', '.join(map(str, none))}" if none else "")
        if not fit.follows:
            return (f"Steps to tune_acc {self.target:g} went from {fmt(measured[0].steps)} at batch "
                    f"{measured[0].batch} to {fmt(measured[-1].steps)} at batch {measured[-1].batch} ({where}); "
                    f"the curve does not follow McCandlish's model within {FIT_TOLERANCE:.0%} ({_why_not(fit)}), "
                    "so no critical batch size is claimed.")
        predicted = ""
        if noise.value is not None:
            factor = max(noise.value / fit.b_crit, fit.b_crit / noise.value)
            predicted = f"; the noise scale at the target, B_simple = {fmt(noise.value)}, is within {factor:.2g}x of it"
        return (f"Critical batch size B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)} for tune_acc "
                f"{self.target:g} ({where}){predicted}.")


def assess(sweep: Sweep, df: pd.DataFrame, facets: list[str] = ()) -> list[Scaling]:
    """One curve and fit per combination of the varied keys but the grid's (`+study=scaling optimizer=adam,lamb -m`:
    B_crit per optimizer); none where the runs had no target_tune_acc or swept fewer than two batch sizes."""
    others = [k for k in facets if k not in GRID_KEYS]
    read = [_assess_group(sweep, frame, group) for group, frame in analysis.groups(df, others)]
    return [one for one in read if one is not None]


def _assess_group(sweep: Sweep, df: pd.DataFrame, group: str) -> Scaling | None:
    if "target_tune_acc" not in df.columns or df["target_tune_acc"].isna().all() or df[BATCH].nunique() < 2:
        return None
    if (runs := _runs(sweep, df)).empty:
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
    found.lines = _lines(found)
    return found


def _noise_batch(runs: pd.DataFrame) -> int:
    batches = runs["noise_batch"].dropna()
    return int(batches.iloc[0]) if len(batches) else noise_scale.SMALL_BATCH


def _runs(sweep: Sweep, df: pd.DataFrame) -> pd.DataFrame:
    """One row per completed or diverged run with its target.json (a diverged run never reaches the target)."""
    per_run = df.drop_duplicates("run_id")
    rows = []
    for record in per_run.to_dict("records"):
        if record["status"] not in ("completed", "diverged"):
            continue
        try:
            found = sweep.target(record["job"]) or {}
        except DamagedFile:
            found = {}
        if record["status"] == "completed" and not found:
            continue  # finished before target.json existed, or it was lost: no steps to count
        steps = found.get("steps_to_target") if record["status"] == "completed" else None
        rows.append({"run_id": record["run_id"], BATCH: int(record[BATCH]), "peak_lr": float(record["peak_lr"]),
                     "seed": record.get("seed"), "status": record["status"], "steps": steps,
                     "samples": found.get("samples_to_target") if steps is not None else None,
                     "resolution": found.get("target_resolution"), "val_acc": found.get("val_acc_at_target"),
                     "noise_batch": found.get("noise_batch"),
                     "gram": np.asarray(found["noise_gram"]) if steps is not None and found.get("noise_gram")
                     else None})
    return pd.DataFrame(rows, columns=["run_id", BATCH, "peak_lr", "seed", "status", "steps", "samples",
                                       "resolution", "val_acc", "noise_batch", "gram"])


def _cells(runs: pd.DataFrame) -> dict[int, dict[float, np.ndarray]]:
    """batch -> learning rate -> steps of its seeds (inf for a run that never reached the target)."""
    cells: dict[int, dict[float, np.ndarray]] = {}
    for (batch, lr), cell in runs.groupby([BATCH, "peak_lr"]):
        cells.setdefault(int(batch), {})[float(lr)] = cell["steps"].astype(float).fillna(np.inf).to_numpy()
    return cells


def choose(runs: pd.DataFrame) -> list[Point]:
    """Every batch size's point: the learning rate whose seeds all reached the target in the fewest mean steps."""
    points = []
    for batch, by_lr in sorted(_cells(runs).items()):
        grid = sorted(by_lr)
        point = Point(batch, grid)
        means = {lr: float(np.mean(steps)) for lr, steps in by_lr.items()}
        best = min(grid, key=lambda lr: (means[lr], lr))
        if math.isfinite(means[best]):
            mine = runs[(runs[BATCH] == batch) & (runs["peak_lr"] == best)]
            point.lr, point.steps, point.seeds = best, means[best], len(mine)
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
    return mccandlish.fit(_cells(runs), [p.batch for p in measured], [p.steps for p in measured], replicates)


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "∞"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def interval(bounds: tuple[float, float] | None) -> str:
    if bounds is None or any(isinstance(b, float) and math.isnan(b) for b in bounds):
        return "[no interval]"
    return f"[{fmt(bounds[0])}, {fmt(bounds[1])}]"


def _lines(s: Scaling) -> list[str]:
    measured, missing = s.measured, [p for p in s.points if p.steps is None]
    size = f"{s.tune_size} held-out training samples" if s.tune_size else "the held-out tuning slice"
    lines = [f"Steps to target: the first check at which the tuning slice ({size}) reached accuracy {s.target:g}; "
             "each batch size at the learning rate whose seeds all got there in the fewest mean steps (chosen on "
             "the tuning slice, never on validation)."]
    if missing:
        lines.append(f"Batch {', '.join(str(p.batch) for p in missing)}: no learning rate tried got every seed to "
                     "the target within the run's budget, so it has no point on the curve.")
    if not measured:
        return lines
    coarse = [p for p in measured if p.resolution is not None and p.resolution > RESOLUTION]
    worst = max((p.resolution for p in measured if p.resolution is not None), default=None)
    where = (f" (coarser than {RESOLUTION:.0%} at batch {', '.join(str(p.batch) for p in coarse)}, where one compiled "
             "call of the epoch is a large share of the steps to target)." if coarse
             else f", within {RESOLUTION:.0%} at every batch size.")
    lines.append(f"Resolution: consecutive checks at most {fmt(100 * worst, 2)}% of the steps apart at the crossing"
                 f"{where}")
    edges = [p for p in measured if p.edge]
    if edges:
        lines.append("The chosen learning rate is at an edge of the grid at batch "
                     f"{', '.join(f'{p.batch} ({p.edge})' for p in edges)}: a learning rate beyond it may reach the "
                     "target in fewer steps, so there S(B) is an upper bound.")
    regimes = {}
    for p in measured[1:]:
        regimes.setdefault(p.regime, []).append(p.batch)
    if regimes:
        lines.append("Against the batch size before it: " + "; ".join(
            f"{regime} at batch {', '.join(map(str, batches))}" for regime, batches in regimes.items()) +
            f" (perfect scaling: S fell in proportion to the batch, within {PERFECT:.0%}, i.e. halved when the batch "
            f"doubled; no gain: S fell by less than {NO_GAIN:.0%}).")
    first, last = measured[0], measured[-1]
    lines.append(f"From batch {first.batch} to {last.batch} the steps to target went from {fmt(first.steps)} to "
                 f"{fmt(last.steps)} ({first.steps / last.steps:.3g}x fewer for {last.batch / first.batch:g}x the "
                 f"batch) and the samples from {fmt(first.samples)} to {fmt(last.samples)}.")
    lines += _fit_lines(s)
    return lines


def _fit_lines(s: Scaling) -> list[str]:
    fit, noise = s.fit, s.noise
    if fit is None:
        return ["Fewer than three batch sizes reached the target: no curve fitted."]
    batch, deviation = fit.worst
    shape = f"S = S_min(1 + B_crit/B) with S_min = {fmt(fit.s_min)} {interval(fit.s_min_interval)} steps"
    if not fit.follows:
        lines = [f"The measured curve does not follow McCandlish's model within {FIT_TOLERANCE:.0%} "
                 f"({_why_not(fit)}), so no critical batch size is claimed from it. Its best fit, for reference: "
                 f"{shape} and B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)}."]
    else:
        how = (f"{LEVEL:.0%} bootstrap interval over seeds and the learning-rate choice, {fit.replicates} replicates"
               if fit.replicates else "no interval: one seed per learning rate, nothing to resample")
        lines = [f"Fit ({how}): {shape} and B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)}; every "
                 f"batch size within {abs(deviation):.1%} of the curve, the largest at batch {batch} (the model is "
                 f"said to follow within {FIT_TOLERANCE:.0%})."]
    if noise.value is None:
        lines.append(f"The gradient noise scale at the target is inconclusive: its |G|² estimate, pooled over "
                     f"{noise.runs} run(s), was not positive." if noise.runs else
                     "No run recorded the gradient noise scale at the target.")
        return lines
    unbounded = f" ({noise.non_positive} of {BOOTSTRAP} replicates had |G|² ≤ 0)" if noise.non_positive else ""
    measured = (f"The gradient noise scale measured where the runs reached the target, pooled over {noise.runs} "
                f"runs: B_simple = {fmt(noise.value)} {interval(noise.interval)}{unbounded}")
    if fit.follows:
        factor = max(noise.value / fit.b_crit, fit.b_crit / noise.value)
        lines.append(f"{measured} predicts B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)} within "
                     f"{factor:.2g}x ({'below' if noise.value < fit.b_crit else 'above'} it; McCandlish et al. "
                     "found B_simple within a small factor of B_crit, usually below it).")
    elif math.isfinite(fit.b_crit) and fit.b_crit > 0:
        factor = max(noise.value / fit.b_crit, fit.b_crit / noise.value)
        lines.append(f"{measured}; against the best fit's B_crit = {fmt(fit.b_crit)} (not claimed: the curve does "
                     f"not follow the model) it is within {factor:.2g}x.")
    else:
        lines.append(f"{measured}; with no B_crit fitted there is nothing to check it against.")
    return lines


def _why_not(fit: Fit) -> str:
    batch, deviation = fit.worst
    if abs(deviation) > FIT_TOLERANCE:
        return f"the largest deviation is {deviation:+.1%}, at batch {batch}"
    return "the fit has no finite B_crit: S fell as 1/B throughout" if math.isinf(fit.b_crit) else \
        "the fit has no 1/B term: S did not fall with the batch"
