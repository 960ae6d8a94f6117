"""Time to the target on this machine, from a run timed alone: the time after each check of its tuning slice
(target.json's check_times) is a straight line in the steps once the first compiled call is done,

    T(S) = C + r x S

with r the seconds a step takes, its checks and each epoch's evaluation included (the slope after the first check,
least squares), and C the one-time cost (the first call's compile, what the first check took beyond r). A batch
size's time to the target on a seed is T of that seed's steps to it, infinite where the run missed it (MLPerf and
AlgoPerf count a miss as never); over seeds, the median (its interval and the paired speed-up come from
harness.assess.intervals). Pure numbers."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rate:
    seconds_per_step: float   # r
    one_time: float           # C
    steps: int                # the timed run's steps to the target (or to its last check, where it missed)
    seconds: float            # its measured seconds to them

    def predicted(self, steps: float) -> float:
        """T(steps) = C + r x steps; inf for a run that never reached the target."""
        return self.one_time + self.seconds_per_step * steps if math.isfinite(steps) else math.inf


def rate(check_times: list[list[float]]) -> Rate | None:
    """The line through a run's checks after its first (None with fewer than three checks: no slope to fit)."""
    points = np.asarray(check_times, dtype=float)
    if len(points) < 3:
        return None
    later = points[1:]
    slope = float(np.polyfit(later[:, 0], later[:, 1], 1)[0]) if np.ptp(later[:, 0]) > 0 else math.nan
    if not math.isfinite(slope) or slope <= 0:
        return None
    first_step, first_time = points[0]
    return Rate(slope, max(0.0, float(first_time - slope * first_step)), int(points[-1, 0]), float(points[-1, 1]))


def median(times: np.ndarray) -> float:
    return float(np.median(times)) if len(times) else math.nan
