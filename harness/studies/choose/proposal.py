"""The ramp +study=choose proposes from its own curves: small batches while the accuracy is low, larger ones as it
rises, each phase switched in at a whole epoch (McCandlish et al. 2018 and Merrill et al. 2025: the critical batch
size grows as training goes on; Smith et al. 2018 and AdaBatch grow the batch by hand).

Each batch size's best candidate stopped at the target with the tuning accuracy at every check (target.json's
`check_times` and `check_tune_acc`): from them, the steps it takes to reach each accuracy level, and with its seconds
per step the time from one level to the next. The ramp fastest through every level is a shortest path over the
levels in which the batch never shrinks, the first batch pays its one-time cost (its run's start, its first
check's compile included) and every switch what starting a fit at the new batch cost in that batch's own run (its
pipeline and its train function's compile: target.json's fit_start_seconds): a dynamic programme. It is read as a schedule of whole epochs, each phase's steps times its batch over the training
set. It assumes that a batch size goes on from a level as its own run goes on from there, which only the ramp's own
runs can show: a proposal is a candidate, confirmed and timed alone like the others. No ramp is proposed where one
batch is fastest through every level, where the switches cost more than they save, or where a phase would be
shorter than an epoch. Pure: numbers in, a proposal out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

LEVELS = 24  # accuracy levels between 0 and the target the path goes through
ONE_BATCH = "one batch size is the fastest at every accuracy level"
SWITCH_COST = "the switches cost more than they save"
SHORT = "its phases would be shorter than an epoch"


@dataclass(frozen=True)
class Curve:
    """One batch size's best candidate on the seed that chose it: its steps and tuning accuracy at each check (the
    run stopped at the target: the last check reached it), its seconds per step and one-time seconds (compile and
    start), its global batch, and what a switch to it costs (its fit's start as its run measured it; None: a run
    made before it was measured, charged its one-time seconds)."""
    size: int
    steps: tuple[int, ...]
    tune_acc: tuple[float, ...]
    seconds_per_step: float
    one_time: float = 0.0
    switch: float | None = None

    @property
    def switch_cost(self) -> float:
        return self.one_time if self.switch is None else self.switch

    def reach(self, level: float) -> float:
        """The step at which the run first reached `level` (linear between the checks around it; the first check's
        step for a level it already held there; inf where it never did)."""
        best = np.maximum.accumulate(np.asarray(self.tune_acc, dtype=float))
        above = np.nonzero(best >= level)[0]
        if not len(above):
            return math.inf
        j = int(above[0])
        if j == 0:
            return float(self.steps[0]) * min(1.0, max(0.0, level) / max(best[0], 1e-12))
        low, high = best[j - 1], self.tune_acc[j]
        share = (level - low) / (high - low) if high > low else 1.0
        return float(self.steps[j - 1] + share * (self.steps[j] - self.steps[j - 1]))

    def seconds(self, level: float) -> float:
        return self.reach(level) * self.seconds_per_step


@dataclass
class Proposal:
    phases: list[tuple[int, int]]        # (start epoch, batch size): empty where none is proposed
    predicted: float                     # the ramp's predicted seconds to the target (inf: none)
    fixed: tuple[int, float]             # the fastest single batch size and its predicted seconds
    why_not: str | None = None           # why no ramp is proposed
    switches: list[float] = field(default_factory=list)  # the accuracy at each switch
    unswitched: tuple[list[int], float, float] | None = None  # where the switches cost more than they save: the
    # sizes of the fastest path without their cost, its seconds, and what its switches cost
    switches_measured: bool = True  # every switch charged its batch's measured fit start (False: an older sweep's
    # runs, which measured none: each switch charged the batch's one-time cost)

    @property
    def saving(self) -> float:
        """The ramp's predicted time as a share of the fastest fixed batch's less one (negative: faster)."""
        return self.predicted / self.fixed[1] - 1 if self.phases else 0.0


def _levels(target: float) -> np.ndarray:
    return np.linspace(0.0, target, LEVELS + 1)[1:]


def _path(curves: list[Curve], levels: np.ndarray, switch_costs: bool) -> tuple[float, list[int]]:
    """The fastest non-decreasing choice of curve for each level step: (seconds, the curve index per step)."""
    sizes = len(curves)
    times = np.array([[curve.seconds(level) for level in levels] for curve in curves])  # [curve, level]
    steps = np.diff(np.concatenate([np.zeros((sizes, 1)), times], axis=1), axis=1)      # each step's seconds
    cost = np.full((len(levels), sizes), math.inf)
    came = np.zeros((len(levels), sizes), dtype=int)
    for k in range(sizes):
        cost[0, k] = steps[k, 0] + (curves[k].one_time if switch_costs else 0.0)
    for i in range(1, len(levels)):
        for k in range(sizes):
            stay = cost[i - 1, k]
            options = [(stay, k)] + [(cost[i - 1, j] + (curves[k].switch_cost if switch_costs else 0.0), j)
                                     for j in range(k)]  # from a smaller batch only
            best, came[i, k] = min(options)
            cost[i, k] = best + steps[k, i]
    end = int(np.argmin(cost[-1]))
    path = [end]
    for i in range(len(levels) - 1, 0, -1):
        path.append(int(came[i, path[-1]]))
    return float(cost[-1, end]), path[::-1]


def propose(curves: list[Curve], target: float, train_size: int) -> Proposal:
    """The ramp through the levels up to `target` (curves in increasing batch size), or why none."""
    curves = sorted(curves, key=lambda c: c.size)
    fixed = min(((c.size, c.seconds(target) + c.one_time) for c in curves), key=lambda found: found[1])
    levels = _levels(target)
    seconds, path = _path(curves, levels, switch_costs=True)
    if len(set(path)) == 1:
        free_seconds, free = _path(curves, levels, switch_costs=False)
        if len(set(free)) == 1:
            return Proposal([], math.inf, fixed, ONE_BATCH)
        order = [k for i, k in enumerate(free) if i == 0 or free[i - 1] != k]
        cost = curves[order[0]].one_time + sum(curves[k].switch_cost for k in order[1:])  # the start, each switch
        return Proposal([], math.inf, fixed, SWITCH_COST,
                        unswitched=([curves[k].size for k in order], free_seconds, cost),
                        switches_measured=all(curves[k].switch is not None for k in order[1:]))
    phases, switches, epoch = [], [], 0.0
    runs = [(k, i) for i, k in enumerate(path) if i == 0 or path[i - 1] != k]  # (curve, first level step)
    for n, (k, first) in enumerate(runs):
        last = runs[n + 1][1] if n + 1 < len(runs) else len(levels)
        curve = curves[k]
        start = curve.reach(levels[first - 1]) if first else 0.0
        phases.append((round(epoch), curve.size))
        switches.append(float(levels[first - 1]) if first else 0.0)
        epoch += (curve.reach(levels[last - 1]) - start) * curve.size / train_size
    kept = [(start, size) for n, (start, size) in enumerate(phases)
            if n == len(phases) - 1 or phases[n + 1][0] > start]  # a phase that rounds to no epoch is dropped
    if len(kept) < 2:
        return Proposal([], math.inf, fixed, SHORT)
    return Proposal(kept, seconds, fixed, None, switches[1:len(kept)])
