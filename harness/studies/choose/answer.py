"""+study=choose's answer, from a reading whose timed runs have ended: at every batch size its best candidate's
time to the target on each seed that judges (not the seed that chose it): what that seed's own run of the printed
command recorded, alone on this machine (`measured`; an older sweep's, T = C + r x S off the line of two timed runs:
`on_line`, timing.py), the batch size with the least median time whose every judging seed reached the target, its
speed-up over b as the command sets it and over b at its own best (the geometric mean of the per-seed ratios with a
paired t-interval on their logs, simultaneous over every batch size the answer was picked from, so the pick's luck
does not count in its favour: harness.assess.intervals), the batch sizes not shown slower than it (just as fast), the
validation accuracy at the target beside b's, and what the rule of thumb "a batch of 32 or less" costs; every batch
size left out with its reason, and a best at its grid's edge. Numbers only: words.py says them."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from harness.assess import intervals
from harness.studies.choose import timing
from harness.studies.choose.settings import AS_IS, RAMPS

RULE_OF_THUMB = 32  # "if time allows, keep the batch size at 32 or below"
TOO_FEW_CHECKS = "too few checks"  # an older sweep's timed run that completed with fewer checks than a line needs
NO_TARGET_FILE = "no target.json"  # a timed run that completed and left no readable target.json
NOT_ENDED = ("not started", "running")  # a timed run's status while the timing round goes on
FAULTS = ("diverged", "failed")  # a run's status that says why it did not reach the target


@dataclass
class Timed:
    size: int
    candidate: object              # reading.Candidate: its best (b's as it is for `base`)
    steps: np.ndarray              # by seed, the seeds in the sweep's order (inf: missed)
    times: np.ndarray              # seconds to the target by seed (inf: missed)
    median: float
    interval: intervals.Interval   # the median's, over the seeds (order statistics: its level is its coverage)
    val_acc: float | None          # mean validation accuracy where its seeds reached the target
    runs: int = 1                  # the timed runs its times come from (an older sweep's line: 2)
    seconds_per_step: float = math.nan  # its seconds to the target over its steps, median over seeds (the line's r)
    throughput: float = math.nan   # training samples a second to the target, everything included (median over seeds)
    one_time: float | None = None  # an older sweep's line: its one-time cost C
    phase_seconds_per_step: tuple[float, ...] = ()  # a ramp's: each batch's seconds a step, median over seeds (those
    # reached before the target)

    @property
    def reached_all(self) -> bool:
        return bool(np.isfinite(self.steps).all())

    @property
    def ramp(self) -> bool:
        """A batch schedule (settings.RAMPS), not one batch size: `size` is its first phase's."""
        return self.candidate.name in RAMPS

    @property
    def prediction(self) -> intervals.Interval:
        """Where a rerun of its printed command on a new seed should fall: the seeds' measured times, a t
        prediction interval on their logs (a seed that missed left out)."""
        return intervals.new_run_interval(self.times[np.isfinite(self.times)])

@dataclass
class Answer:
    timed: list[Timed]             # every batch size's best that was timed and b as it is, smallest batch first
    base: Timed                    # b as the command sets it
    best: Timed                    # the least median time among those that reached the target on every seed
    speedup: intervals.Ratio       # base's time over best's, paired by seed (b's misses left out and said)
    just_as_fast: list[Timed] = field(default_factory=list)   # not shown slower than the answer
    thumb: Timed | None = None     # the fastest of 32 or less that reached it on every seed
    own: Timed | None = None       # b at its own best, where that is not b as it is
    own_speedup: intervals.Ratio | None = None   # own's time over best's, paired by seed
    fixed: Timed | None = None     # the fastest single batch size (the answer unless a ramp beat it)
    ramps: list[tuple[Timed, intervals.Ratio | None]] = field(default_factory=list)  # each ramp timed, and the
    # fastest fixed batch's time over its, paired by seed, its interval simultaneous over the single batch sizes it
    # was picked from (None where it missed on a seed that judges)

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


def _timed(size: int, candidate, steps: np.ndarray, times: np.ndarray, seeds: list[int], **measures) -> Timed:
    reached = [candidate.val_acc[seed] for seed in seeds
               if candidate.val_acc.get(seed) is not None and candidate.reached_on(seed)]
    return Timed(size, candidate, steps, times, timing.median(times), intervals.median_interval(times),
                 float(np.mean(reached)) if reached else None, **measures)


def measured(size: int, candidate, seeds: list[int]) -> Timed | None:
    """A best's time on each seed: the seconds to the target its own run there recorded (run alone, as printed),
    inf where it missed; None while a seed has no such run, or one that reached the target without a time."""
    if any(seed not in candidate.steps for seed in seeds):
        return None
    steps = np.array([candidate.steps[seed] for seed in seeds], dtype=float)
    times = np.array([candidate.seconds.get(seed) if candidate.reached_on(seed) else math.inf for seed in seeds],
                     dtype=float)  # a seconds_to_target of None: nan
    if np.isnan(times).any():
        return None
    reached = np.isfinite(times)
    samples = np.array([candidate.samples.get(seed, math.nan) for seed in seeds], dtype=float)
    return _timed(size, candidate, steps, times, seeds,
                  seconds_per_step=_median(times[reached] / steps[reached]),
                  throughput=_median(samples[reached] / times[reached]))


def on_line(size: int, candidate, rates: list[timing.Rate], seeds: list[int]) -> Timed | None:
    """An older sweep's (choose.timing "line"): a best's time on each seed, T of the seed's steps, the timed runs'
    rates taken in turn over the seeds."""
    if not rates or any(seed not in candidate.steps for seed in seeds):
        return None
    steps = np.array([candidate.steps[seed] for seed in seeds], dtype=float)
    times = np.array([rates[i % len(rates)].predicted(s) for i, s in enumerate(steps)], dtype=float)
    rate = timing.mean(rates)
    return _timed(size, candidate, steps, times, seeds, runs=len(rates), seconds_per_step=rate.seconds_per_step,
                  throughput=size / rate.seconds_per_step, one_time=rate.one_time)


def _median(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(np.median(values)) if len(values) else math.nan


def of(found, timed_of: Callable[[int, object], Timed | None], simultaneous: bool = True) -> Answer | None:
    """The answer from a reading (`found`: reading.Choice) and each candidate's times over the seeds that judge
    (`timed_of(size, candidate)`: a Timed, or None until it has them); None until b as it is and at least one best
    are timed on every one of them. `simultaneous`: the speed-ups' intervals hold their level over every batch size
    the answer was picked from (an older sweep's: each on its own, as it was read)."""
    b = found.sizes[0]
    base_candidate = next((c for c in found.candidates.get(b, []) if c.name == AS_IS), None)
    base = None if base_candidate is None else timed_of(b, base_candidate)
    if base is None:
        return None
    every = []
    for size in found.sizes:
        best = found.best(size)
        if best is None:
            continue
        found_time = base if best is base_candidate else timed_of(size, best)
        if found_time is not None:
            every.append(found_time)
    if base not in every:
        every.append(base)  # b as the command sets it is an answer too: "no batch size beats it"
    every += [t for c in found.ramps if (t := timed_of(c.size, c)) is not None]
    every.sort(key=lambda t: (t.ramp, t.size, t is not base))
    qualified = [t for t in every if t.reached_all]
    if not qualified:
        return None
    best = min(qualified, key=lambda t: (t.median, t.ramp, t.size))
    # the answer is the least of these: each interval against it is one of as many as it was picked from
    family = max(1, len(qualified) - 1) if simultaneous else 1

    def ratio(top: Timed, bottom: Timed) -> intervals.Ratio:
        return intervals.paired_ratio(top.times, bottom.times, comparisons=family)

    faster = [t for t in qualified if t is not best and not ratio(t, best).interval.above(1.0)]
    small = [t for t in qualified if t.size <= RULE_OF_THUMB and not t.ramp]
    own = next((t for t in every if t.size == b and t is not base and not t.ramp), None)
    singles = [t for t in qualified if not t.ramp]
    fixed = min(singles, key=lambda t: (t.median, t.size), default=None)
    # the fastest single batch size is picked among them too: a ramp's interval against it is one of as many
    picked = max(1, len(singles)) if simultaneous else 1
    return Answer(every, base, best, ratio(base, best), faster,
                  min(small, key=lambda t: (t.median, t.size)) if small else None, own,
                  None if own is None or best is own or not own.reached_all else ratio(own, best), fixed,
                  [(t, intervals.paired_ratio(fixed.times, t.times, comparisons=picked)
                    if fixed is not None and t.reached_all else None) for t in every if t.ramp])


def edge(name: str, grid: tuple[float, ...]) -> float | None:
    """The grid factor a best candidate's name ends at where it is the grid's edge (linear_x2 with a grid up to 2:
    2; a step further was not tried), else None."""
    base, _, factor = name.rpartition("_x")
    if not base or not grid:
        return None
    try:
        value = float(factor)
    except ValueError:
        return None
    return value if (value > 1 and value >= max(grid)) or (value < 1 and value <= min(grid)) else None


def left_out(found) -> dict[int, str]:
    """Every batch size that is not a candidate for the answer, with its own reason: no run yet, no candidate
    reaching the target on the seed that chooses (or its leader diverged or failed there), its timed run failed or
    had too few checks to fit a time, or its best missed (diverged, failed) on a seed that judges."""
    a, chooser = found.answer, found.choosing[0]
    qualified = set() if a is None else {t.size for t in a.timed if t.reached_all}
    out = {}
    for size in found.sizes:
        if size in qualified:
            continue
        leader = found.leader(size)
        if leader is None:
            failed = any(c.status.get(chooser) == "failed" for c in found.candidates.get(size, []))
            out[size] = f"every candidate failed on seed {chooser}" if failed else "no run has ended yet"
            continue
        best = found.best(size)
        if best is None:
            how = leader.status.get(chooser) if leader.status.get(chooser) in FAULTS else ""
            out[size] = (f"no candidate reached the target on seed {chooser}, the seed that chooses" +
                         (f" (its closest, {leader.name}, {how})" if how else ""))
            continue
        missed = {}
        for seed in found.judging:
            status = best.status.get(seed)
            if seed not in best.steps and status != "failed":
                continue
            if not best.reached_on(seed):
                missed.setdefault(status if status in FAULTS else "missed the target", []).append(seed)
        if missed:
            out[size] = f"its best ({best.name}) " + " and ".join(
                f"{how} on seed {', '.join(map(str, seeds))}" for how, seeds in missed.items())
            continue
        timing_status = found.timing.get((size, best.name))
        if timing_status == TOO_FEW_CHECKS:
            out[size] = f"its timed run ({best.name}) had too few checks of the target to fit a time"
        elif timing_status == NO_TARGET_FILE:
            out[size] = f"its timed run ({best.name}) completed but its target.json is missing or damaged"
        elif timing_status in ("failed", "diverged", "interrupted"):
            out[size] = f"its timed run ({best.name}) {timing_status}"
        elif any(seed not in best.steps for seed in found.judging):
            out[size] = "its best has not run on every seed that judges yet"
        else:
            out[size] = "not timed yet"
    return out
