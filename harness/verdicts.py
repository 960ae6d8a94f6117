"""Verdicts computed from the data: was "larger batch -> lower val_acc" reproduced, and what did train accuracy do?

Rules (a difference of MIN_EFFECT accuracy, one point, is the smallest effect worth a claim):
- two or more seeds at both ends: a 95% Welch interval for val_acc(smallest batch) - val_acc(largest batch);
  reproduced when the interval lies above 0 and the mean drop is at least MIN_EFFECT; not reproduced when the
  interval lies below EQUIVALENCE_MARGIN (a drop of more than two points is ruled out) and the mean drop is
  under MIN_EFFECT; inconclusive otherwise (the seeds cannot tell).
- one seed: no interval exists. Reproduced when the drop is at least SINGLE_SEED_EFFECT and val_acc falls
  with batch size overall (Spearman rho < 0), not reproduced when there is no drop, inconclusive otherwise;
  the verdict always says n = 1 and that it is indicative only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from harness.analysis import BATCH

MIN_EFFECT = 0.01
EQUIVALENCE_MARGIN = 0.02
SINGLE_SEED_EFFECT = 0.02
CLAIM = "Larger batches gave lower validation accuracy"


@dataclass
class BatchVerdict:
    facet: str
    outcome: str                      # reproduced | not reproduced | inconclusive
    headline: str
    details: list[str] = field(default_factory=list)
    n_seeds: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    effect: float = float("nan")      # mean final val_acc, smallest minus largest batch
    interval: tuple[float, float] | None = None
    rho: float = float("nan")


def welch_interval(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Confidence interval for mean(a) - mean(b) with unequal variances."""
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    diff, se = float(np.mean(a) - np.mean(b)), math.sqrt(va + vb)
    if se == 0.0:
        return diff, diff
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = stats.t.ppf(0.5 + level / 2, dof) * se
    return diff - half, diff + half


def _pm(values: pd.Series) -> str:
    return f"{values.mean():.3f}" + (f" ± {values.std(ddof=1):.3f}" if len(values) > 1 else "")


def batch_size_verdict(final: pd.DataFrame, facet: str = "all runs") -> BatchVerdict:
    """The verdict for one facet's completed runs (one row per run, see analysis.final_results)."""
    sizes = sorted(final[BATCH].unique().tolist()) if len(final) else []
    if len(sizes) < 2:
        return BatchVerdict(facet, "inconclusive", f"{CLAIM}: inconclusive (needs at least two batch sizes with "
                            f"completed runs; found {len(sizes)})", batch_sizes=sizes)
    small, large = (final[final[BATCH] == b] for b in (sizes[0], sizes[-1]))
    n_seeds = int(final.groupby(BATCH).size().min())
    effect = float(small["val_acc"].mean() - large["val_acc"].mean())
    rho = float(stats.spearmanr(final[BATCH], final["val_acc"]).statistic) if final["val_acc"].nunique() > 1 else 0.0
    interval = None
    if min(len(small), len(large)) >= 2:
        interval = welch_interval(small["val_acc"].to_numpy(), large["val_acc"].to_numpy())
        if interval[0] > 0 and effect >= MIN_EFFECT:
            outcome = "reproduced"
        elif interval[1] < EQUIVALENCE_MARGIN and effect < MIN_EFFECT:
            outcome = "not reproduced"
        else:
            outcome = "inconclusive"
        evidence = f"95% interval of the drop [{interval[0]:+.3f}, {interval[1]:+.3f}], n = {n_seeds} seeds per batch size"
    else:
        if effect >= SINGLE_SEED_EFFECT and rho < 0:
            outcome = "reproduced"
        elif effect <= 0:
            outcome = "not reproduced"
        else:
            outcome = "inconclusive"
        evidence = "n = 1 seed: no spread can be estimated, so this is indicative only (sweep seed=0,1,2 for a claim)"
    headline = (
        f"{CLAIM}: {outcome}. Final val_acc {_pm(small['val_acc'])} at batch {sizes[0]} vs "
        f"{_pm(large['val_acc'])} at batch {sizes[-1]} (drop {effect:+.3f}); Spearman rho over "
        f"{len(sizes)} batch sizes {rho:+.2f}; {evidence}."
    )
    details = [
        f"At each run's best epoch: val_acc {_pm(small['best_val_acc'])} at batch {sizes[0]} vs "
        f"{_pm(large['best_val_acc'])} at batch {sizes[-1]} (drop {small['best_val_acc'].mean() - large['best_val_acc'].mean():+.3f}).",
        train_accuracy_note(small, large, sizes[0], sizes[-1]),
    ]
    return BatchVerdict(facet, outcome, headline, details, n_seeds, sizes, effect, interval, rho)


def train_accuracy_note(small: pd.DataFrame, large: pd.DataFrame, small_b: int, large_b: int) -> str:
    """Say which moved, train or validation accuracy, so under-training is not read as a generalization gap."""
    val_drop = small["val_acc"].mean() - large["val_acc"].mean()
    train_drop = small["train_eval_acc"].mean() - large["train_eval_acc"].mean()
    gap_small, gap_large = small["gap"].mean(), large["gap"].mean()
    numbers = (
        f"Train accuracy after the final epoch (train_eval_acc) was {small['train_eval_acc'].mean():.3f} at batch "
        f"{small_b} and {large['train_eval_acc'].mean():.3f} at batch {large_b}; the gap train_eval_acc - val_acc "
        f"went from {gap_small:+.3f} to {gap_large:+.3f}."
    )
    if val_drop < MIN_EFFECT:
        reading = "Validation accuracy did not fall with batch size."
    elif train_drop >= val_drop / 2:
        reading = (
            "Train accuracy fell too, so most of the validation drop is under-training (fewer optimizer steps in "
            "the same epochs), not a generalization gap. Compare at matched steps (see val_acc vs steps)."
        )
    elif gap_large - gap_small >= MIN_EFFECT:
        reading = "Train accuracy held while validation accuracy fell: the gap widened, a generalization gap."
    else:
        reading = "Both moved a little; neither under-training nor a widened gap stands out."
    return f"{numbers} {reading}"
