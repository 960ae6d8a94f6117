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


def mean(rates: list) -> "Rate | Curve":
    """The rates of several timed runs of one command, averaged (r and C; a ramp's times at each check): the
    prediction a check is held to."""
    if isinstance(rates[0], Curve):
        shortest = min(len(r.steps_at) for r in rates)
        return Curve(rates[0].steps_at[:shortest],
                     tuple(float(np.mean([r.seconds_at[i] for r in rates])) for i in range(shortest)))
    return Rate(float(np.mean([r.seconds_per_step for r in rates])), float(np.mean([r.one_time for r in rates])),
                rates[-1].steps, rates[-1].seconds, rates[0].steps_per_epoch)


@dataclass(frozen=True)
class Curve:
    """A ramp's time to the target, run alone in the printed command's shape (its target checked once an epoch):
    a ramp's seconds a step change with its phases, each phase pays its compile, so no one line fits its checks;
    its measured seconds at each check (the time between epochs taken out) are the time of any seed that crosses
    the target within that epoch, its last phase's seconds an epoch carried on past the last. The same interface as
    Rate: `seconds_per_step` and `one_time` are its last phase's slope and what the line through it leaves at 0."""
    steps_at: tuple[int, ...]      # the step at each check (an epoch's end)
    seconds_at: tuple[float, ...]  # the seconds to it

    @property
    def steps(self) -> int:
        return self.steps_at[-1]

    @property
    def seconds(self) -> float:
        return self.seconds_at[-1]

    @property
    def steps_per_epoch(self) -> int:
        return self.steps_at[-1] - (self.steps_at[-2] if len(self.steps_at) > 1 else 0)

    @property
    def seconds_per_step(self) -> float:
        before = (self.steps_at[-2], self.seconds_at[-2]) if len(self.steps_at) > 1 else (0, 0.0)
        return (self.seconds_at[-1] - before[1]) / max(1, self.steps_at[-1] - before[0])

    @property
    def one_time(self) -> float:
        return max(0.0, self.seconds_at[0] - self.seconds_per_step * self.steps_at[0]) if len(self.steps_at) == 1 \
            else max(0.0, self.seconds - self.seconds_per_step * self.steps)

    def at_check(self, steps: float) -> float:
        if not math.isfinite(steps):
            return steps
        later = [s for s in self.steps_at if s >= steps - 1e-9]
        if later:
            return float(later[0])
        return self.steps + math.ceil((steps - self.steps) / self.steps_per_epoch - 1e-9) * self.steps_per_epoch

    def predicted(self, steps: float) -> float:
        """The seconds at the check that sees `steps`: measured up to the last check, the last epoch's rate after."""
        if not math.isfinite(steps):
            return math.inf
        at = self.at_check(steps)
        if at <= self.steps:
            return self.seconds_at[self.steps_at.index(int(at))]
        return self.seconds + self.seconds_per_step * (at - self.steps)


def curve(check_times: list[list[float]]) -> Curve | None:
    """A ramp's timed run as a Curve (None without a check)."""
    if not check_times:
        return None
    return Curve(tuple(int(c[0]) for c in check_times),
                 tuple(float(c[1] - (c[2] if len(c) > 2 else 0.0)) for c in check_times))


def median(times: np.ndarray) -> float:
    return float(np.median(times)) if len(times) else math.nan
