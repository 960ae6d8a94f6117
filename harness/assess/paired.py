"""A difference estimated over paired seeds: the mean of per-seed differences with Student's t interval, and what
the runs say of it (shown, not shown, ruled out). Every study that compares runs of the same seeds shares it: a
diagnosis's parts, a recovery's drop and gap."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.assess.intervals import t_interval

RULED_OUT = 0.01  # a part whose whole 95% interval lies within +-RULED_OUT of 0 is too small to matter
IDENTICAL = 1e-9  # seeds whose values differ by no more than this agree exactly: their interval has no width


@dataclass(frozen=True)
class Estimate:
    """A mean over paired seeds with its 95% t-interval."""

    value: float | None  # None: not measured
    low: float | None    # None with one seed, or not measured
    high: float | None
    n: int
    per_seed: tuple[float, ...]

    @property
    def identical(self) -> bool:
        """Every seed gave the same value (every run predicting one class, say): an interval of no width, which is
        no measure of doubt."""
        return len(self.per_seed) > 1 and max(self.per_seed) - min(self.per_seed) <= IDENTICAL

    @property
    def reading(self) -> str:
        """What the runs say of it; an interval within +-RULED_OUT is "ruled out" even where it excludes 0."""
        if self.value is None:
            return "not measured"
        if self.low is None or self.high is None:
            return "one seed: indicative"
        if self.identical and abs(self.value) > RULED_OUT:  # a part that is 0 by construction is still ruled out
            return "identical at every seed: no spread to judge"
        if -RULED_OUT <= self.low and self.high <= RULED_OUT:
            return "ruled out"
        if self.low <= 0.0 <= self.high:
            return "not shown by these runs"
        return "shown"


def estimate(per_seed) -> Estimate:
    """The mean over seeds with its 95% t-interval; NaN in any seed (a diverged run) makes it not measured."""
    values = np.asarray(per_seed, dtype=float).ravel()
    seeds = tuple(float(x) for x in values)
    if len(values) == 0 or np.isnan(values).any():
        return Estimate(None, None, None, len(values), seeds)
    if len(values) == 1:
        return Estimate(float(values[0]), None, None, 1, seeds)
    low, high = t_interval(values)
    return Estimate(float(values.mean()), low, high, len(values), seeds)
