"""Time to the target on this machine, from runs timed alone: the time after each check of the tuning slice
(target.json's check_times) is a straight line in the steps once the first compiled call is done,

    T(S) = C + r x S

with r the seconds a step takes, its checks included (the slope after the first check, least squares), and C the
one-time cost (the first call's compile, what the first check took beyond r). The seconds the harness spent between
epochs (its per-epoch measurements, the row, the checkpoint: target.json's between_epochs_seconds, beside each
check) are taken out: a user's own run does not spend them. A run timed in the printed command's shape
(target_check=epoch) checks its target once an epoch, so it stops at the end of the epoch in which it crossed: its
steps are rounded up to that epoch's end before T is taken. A batch size's time to the target on a seed is T of that
seed's steps to it, infinite where the run missed it (MLPerf and AlgoPerf count a miss as never); over seeds, the
median (its interval and the paired speed-up come from harness.assess.intervals). Pure numbers."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rate:
    seconds_per_step: float   # r
    one_time: float           # C
    steps: int                # the timed run's steps to the target (or to its last check, where it missed)
    seconds: float            # its measured seconds to them, the time between epochs taken out
    steps_per_epoch: int | None = None  # where the target is checked once an epoch: steps round up to its end

    def at_check(self, steps: float) -> float:
        """The step at which a run that crosses the target at `steps` sees it: the epoch's end, checked once an
        epoch; `steps` itself, checked within epochs."""
        if self.steps_per_epoch and math.isfinite(steps):
            return math.ceil(steps / self.steps_per_epoch - 1e-9) * self.steps_per_epoch
        return steps

    def predicted(self, steps: float) -> float:
        """T(steps) = C + r x steps (at the check that sees them); inf for a run that never reached the target."""
        if not math.isfinite(steps):
            return math.inf
        return self.one_time + self.seconds_per_step * self.at_check(steps)


def rate(check_times: list[list[float]], steps_per_epoch: int | None = None) -> Rate | None:
    """The line through a run's checks after its first, each check's seconds less the time between epochs before it
    (a third entry; older files have none). Two checks: the line through both. One check (the target seen at the
    first epoch's end, checked once an epoch): C = 0, r = its seconds over its steps, which predicts that check
    exactly. None without a check, or where the slope is not positive."""
    points = np.asarray([[c[0], c[1] - (c[2] if len(c) > 2 else 0.0)] for c in check_times], dtype=float)
    if len(points) == 0 or (len(points) < 3 and not steps_per_epoch):
        return None
    last_step, last_time = int(points[-1, 0]), float(points[-1, 1])
    if len(points) == 1:
        return Rate(last_time / last_step, 0.0, last_step, last_time, steps_per_epoch) if last_step > 0 else None
    later = points[1:] if len(points) >= 3 else points
    slope = float(np.polyfit(later[:, 0], later[:, 1], 1)[0]) if np.ptp(later[:, 0]) > 0 else math.nan
    if not math.isfinite(slope) or slope <= 0:
        return None
    first_step, first_time = points[0]
    return Rate(slope, max(0.0, float(first_time - slope * first_step)), last_step, last_time, steps_per_epoch)


def mean(rates: list[Rate]) -> Rate:
    """The rates of several timed runs of one command, averaged (r and C): the prediction a check is held to."""
    return Rate(float(np.mean([r.seconds_per_step for r in rates])), float(np.mean([r.one_time for r in rates])),
                rates[-1].steps, rates[-1].seconds, rates[0].steps_per_epoch)


def median(times: np.ndarray) -> float:
    return float(np.median(times)) if len(times) else math.nan
