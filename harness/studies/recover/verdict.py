"""+study=recover's verdict, from per-seed numbers: does the recipe at B keep b's validation accuracy, and if not,
how much of the drop does it recover (the budget, how many epochs B needs to reach b's tuning accuracy: budget.py).

The verdict pairs seeds: v(b), v(B) as it is and v(recipe) of the same seed, and decides by one symmetric rule on
the gap v(b) - v(recipe) and its two-sided 95% t-interval (harness.assess.intervals) against the tolerance:

- the whole interval within the tolerance (its upper end at most it): `recovered`, and shown (a one-sided 97.5%
  non-inferiority bound);
- the interval straddles the tolerance, whichever side its mean lies on: `undecided`, with about how many seeds
  would decide it (the interval then clear of the tolerance on the mean's side);
- the whole interval above the tolerance: the recipe falls short. The share of the drop D = v(b) - v(B) it
  recovers, mean(v(recipe) - v(B)) / mean(D), with Fieller's interval for a ratio of paired means: `partly` when
  that interval lies above 0, `not_recovered` when it covers 0 (or is unbounded: the drop itself is not shown), or
  where B as it is lost nothing to b (no share to recover).

A mean within the tolerance is not enough for "recovered": a wide interval reads undecided, as a mean beyond it with
an interval reaching back does. One seed: the same rules on the point values, indicative, never shown, no interval
(never undecided: there is no interval).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from harness.assess import intervals
from harness.assess.paired import Estimate, estimate

RECOVERED, UNDECIDED, PARTLY, NOT_RECOVERED = "recovered", "undecided", "partly", "not_recovered"


@dataclass(frozen=True)
class Verdict:
    kind: str                    # RECOVERED, UNDECIDED, PARTLY or NOT_RECOVERED
    shown: bool                  # recovered, and the non-inferiority bound says so too
    gap: Estimate                # v(b) - v(recipe), paired over seeds
    small: Estimate              # v(b)
    large: Estimate              # v(B as it is)
    recipe: Estimate             # v(recipe)
    drop: Estimate               # v(b) - v(B as it is), over the same seeds
    share: float | None          # mean(v(recipe) - v(B)) / mean(drop); None where the drop is 0 or below
    share_low: float | None      # Fieller's 95% interval; None with one seed or where it is unbounded
    share_high: float | None
    seeds_needed: int | None     # recovered but not shown, or undecided: about how many seeds would show or decide it
    tolerance: float
    gain: Estimate | None = None  # v(recipe) - v(b), paired over seeds: how far the recipe lies above b

    @property
    def drop_shown(self) -> bool:
        d = self.drop
        return d.low is not None and d.low > 0.0

    @property
    def indicative(self) -> bool:
        return self.gap.n < 2


def judge(small: np.ndarray, large: np.ndarray, recipe: np.ndarray, tolerance: float) -> Verdict:
    """The verdict from the val_acc of b, B as it is and the recipe at B, index i the same seed in each."""
    small, large, recipe = (np.asarray(a, dtype=float) for a in (small, large, recipe))
    gap, drop = estimate(small - recipe), estimate(small - large)
    recovered = small.mean() - recipe.mean()
    # a share of a drop there is: where B as it is did as well as b or better, nothing was lost to recover
    share = None if drop.value <= 0.0 else float((recipe - large).mean() / drop.value)
    low = high = None
    if len(small) > 1 and share is not None:
        bounds = intervals.ratio_interval(recipe - large, small - large)
        low, high = bounds if bounds is not None else (None, None)
    shown, needed = False, None
    if len(small) < 2 or gap.low is None:  # indicative: the point values, no interval to decide on
        kind = RECOVERED if recovered <= tolerance else (PARTLY if share is not None and share > 0.0
                                                         else NOT_RECOVERED)
    elif gap.high <= tolerance:
        kind, shown = RECOVERED, True
    elif gap.low <= tolerance:
        kind, needed = UNDECIDED, intervals.seeds_to_show(small - recipe, tolerance)
    else:
        kind = PARTLY if low is not None and low > 0.0 else NOT_RECOVERED
    return Verdict(kind, shown, gap, accuracy(small), accuracy(large), accuracy(recipe), drop, share, low,
                   high, needed, tolerance, estimate(recipe - small))


def accuracy(per_seed) -> Estimate:
    """An accuracy's mean over seeds with its 95% t-interval cut at 0 and 1, where an accuracy lies (with two
    seeds t(0.975, 1) = 12.7 makes the interval wide, and uncut it could run below 0 or above 1)."""
    e = estimate(per_seed)
    if e.low is None:
        return e
    return dataclasses.replace(e, low=max(0.0, e.low), high=min(1.0, e.high))
