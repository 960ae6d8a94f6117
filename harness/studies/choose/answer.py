"""+study=choose's answer, from a reading whose timing round has ended: at every batch size its best candidate's
time to the target on each seed (timing.py: T = C + r x S, C and r measured alone on this machine), the batch size
with the least median time whose every seed reached the target, its speed-up over b as the command sets it (the
geometric mean of the per-seed ratios with a paired t-interval on their logs: harness.assess.intervals), the batch
sizes not shown slower than it (just as fast), the validation accuracy at the target beside b's, and what the rule of
thumb "a batch of 32 or less" costs. Numbers only: words.py says them."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from harness.assess import intervals
from harness.studies.choose import timing
from harness.studies.choose.settings import AS_IS

RULE_OF_THUMB = 32  # "if time allows, keep the batch size at 32 or below"


@dataclass
class Timed:
    size: int
    candidate: object              # reading.Candidate: its best (b's as it is for `base`)
    rate: timing.Rate
    steps: np.ndarray              # by seed, the seeds in the sweep's order (inf: missed)
    times: np.ndarray              # T(steps) by seed
    median: float
    interval: intervals.Interval   # the median's, over the seeds (order statistics: its level is its coverage)
    val_acc: float | None          # mean validation accuracy where its seeds reached the target

    @property
    def reached_all(self) -> bool:
        return bool(np.isfinite(self.steps).all())

    @property
    def throughput(self) -> float:
        """Training samples a second in steady state (its checks and evaluations included)."""
        return self.size / self.rate.seconds_per_step


@dataclass
class Answer:
    timed: list[Timed]             # every batch size's best that was timed and b as it is, smallest batch first
    base: Timed                    # b as the command sets it
    best: Timed                    # the least median time among those that reached the target on every seed
    speedup: intervals.Ratio       # base's time over best's, paired by seed (b's misses left out and said)
    just_as_fast: list[int] = field(default_factory=list)   # not shown slower than the answer
    thumb: Timed | None = None     # the fastest of 32 or less that reached it on every seed

    @property
    def size(self) -> int:
        return self.best.size

    @property
    def name(self) -> str:
        return self.best.candidate.name

    @property
    def recipe(self) -> dict:
        return self.best.candidate.recipe

    @property
    def beats_base(self) -> bool:
        """The answer is not b as it is, and the speed-up's interval, at its stated level, lies above 1 (one seed:
        no claim)."""
        return self.best is not self.base and self.speedup.interval.above(1.0)


def timed(size: int, candidate, rate: timing.Rate, seeds: list[int]) -> Timed:
    steps = np.array([candidate.steps.get(seed, math.nan) for seed in seeds], dtype=float)
    times = np.array([rate.predicted(s) for s in steps], dtype=float)
    reached = [v for seed, v in candidate.val_acc.items() if v is not None and candidate.reached_on(seed)]
    return Timed(size, candidate, rate, steps, times, timing.median(times), intervals.median_interval(times),
                 float(np.mean(reached)) if reached else None)


def of(found, rates: dict[tuple[int, str], timing.Rate]) -> Answer | None:
    """The answer from a reading (`found`: reading.Choice) and the rates measured alone ((size, candidate) ->
    Rate); None until b as it is and at least one best are timed on every seed."""
    b, seeds = found.sizes[0], found.seeds
    base_candidate = next((c for c in found.candidates.get(b, []) if c.name == AS_IS), None)
    if base_candidate is None or (b, AS_IS) not in rates or any(seed not in base_candidate.steps for seed in seeds):
        return None
    base = timed(b, base_candidate, rates[(b, AS_IS)], seeds)
    every = []
    for size in found.sizes:
        best = found.best(size)
        if best is None or (size, best.name) not in rates or any(seed not in best.steps for seed in seeds):
            continue
        every.append(base if best is base_candidate else timed(size, best, rates[(size, best.name)], seeds))
    if base not in every:
        every.append(base)  # b as the command sets it is an answer too: "no batch size beats it"
    every.sort(key=lambda t: (t.size, t is not base))
    qualified = [t for t in every if t.reached_all]
    if not qualified:
        return None
    best = min(qualified, key=lambda t: (t.median, t.size))
    faster = [t.size for t in qualified if t is not best and not intervals.paired_ratio(t.times, best.times)
              .interval.above(1.0)]
    small = [t for t in qualified if t.size <= RULE_OF_THUMB]
    return Answer(every, base, best, intervals.paired_ratio(base.times, best.times), faster,
                  min(small, key=lambda t: (t.median, t.size)) if small else None)
