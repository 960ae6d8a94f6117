"""+study=choose's later rounds, planned from the rounds before (harness.launch.rounds runs the mechanics): after the
baseline, the candidates at every batch size; then the learning-rate grid around each batch size's leader; then the
confirmation of each batch size's best on the seeds that judge, beside b as it is, each run as printed (its target
checked once an epoch, a whole epoch a call) and alone: what it records is that seed's time; then the check, the
answer and b as it is as printed, alone, on a seed that neither chose nor judged (plan.py fixes it at round 1).
An older sweep (choose.timing "line") plans as it did: a confirmation beside each other, then a timing round of
each best on TIMED_RUNS seeds that judge, then a check on a seed that judges and was not timed.

What a run may cost: every target run but b as it is stops without the target at choose.cap_factor x the samples b
needed (a miss); a grid point also once its samples pass its batch size's leader's (among the candidates round 1
listed, on the seed that chooses) by choose.race_margin (raced out: it cannot be the best). Each limit comes from the
files of the rounds before, so a resumed command plans every round as before."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from harness.assess import sweep as sweep_files
from harness.config.overrides import with_recipe
from harness.studies.choose import plan as choice_plan
from harness.studies.choose import reading as choice
from harness.studies.choose.settings import (
    AS_IS,
    CHECK,
    COMMAND_SHAPE,
    RAMPS,
    TIME,
    TIMED_RUNS,
    point_jobs,
    recorded,
    stages,
)
from harness.studies.study import NOT_ENDED, Round


def next_round(sweep_dir: Path, content: dict[str, Any], round_: int) -> list[tuple[list[str], str]] | str | None:
    """Round `round_`'s jobs (next_jobs), read from the sweep's files; NOT_ENDED while a run of the round before
    has not ended."""
    sweep = sweep_files.read(sweep_dir)
    if sweep.complete_rounds() < round_ - 1:
        return NOT_ENDED
    return next_jobs(content["choose"], choice.choose(sweep, added=False), round_)  # seeds added plan nothing


def next_jobs(record: dict[str, Any], found: choice.Choice, round_: int) -> list[tuple[list[str], str]] | Round | None:
    """Round `round_`'s jobs as (overrides, arm), [] for a round with none, None when the study is done (or has no
    target to time against: the reading says why)."""
    planned = stages(record)
    if round_ > len(planned) or found.target is None:
        return None
    # the command's own seeds: those added later (--add-seeds) run their own jobs and change no round
    stage, seeds, b = planned[round_ - 1], [int(seed) for seed in record["seeds"]], record["small_batch"]
    judging = seeds[1:] or seeds[:1]
    settings = recorded(record)
    if stage == "candidates":
        picked = [(size, c["name"], _capped(found, b, size, c["name"], c["recipe"]), seeds[:1])
                  for size in found.sizes for c in record["candidates"][str(size)]]
    elif stage == "grid":
        picked = []
        for size in found.sizes:
            leader = found.leader(size, listed=True)
            if leader is None:
                continue
            for factor in settings.lr_grid:
                recipe = {**leader.recipe, "lr_factor": choice.grid_lr(leader.recipe, record, factor)}
                name = f"{leader.name}_x{factor:g}"
                race = race_limit(found, leader, settings.race_margin)
                picked.append((size, name, _capped(found, b, size, name, recipe, race), seeds[:1]))
    elif stage == "confirm" and settings.timing == "measured":  # each batch size's best on the seeds that judge,
        # and b as it is (the speed-up's base), each as printed and alone: what the run records is the seed's time
        picked = [(size, name, {**_capped(found, b, size, name, recipe), **COMMAND_SHAPE}, on)
                  for size, name, recipe, on in _bests(found, b, seeds[1:])]
        return Round(choice_plan.target_jobs(record, point_jobs(record), found.target, picked), alone=True)
    elif stage == "confirm":  # an older sweep's: on the seeds that judge, beside each other; timed in the next round
        picked = [(size, name, _capped(found, b, size, name, recipe), on)
                  for size, name, recipe, on in _bests(found, b, seeds[1:])]
    elif stage == "time":  # each of them as printed, alone, on seeds that judge: its seconds on this machine
        picked = [(size, name, {**recipe, **COMMAND_SHAPE, **_timed_limit(found, settings.time_epochs, name)}, timed)
                  for size, name, recipe, timed in _bests(found, b, timing_seeds(judging))]
        return Round(choice_plan.target_jobs(record, point_jobs(record), found.target, picked, TIME), alone=True)
    elif settings.timing == "measured":  # check: the answer (b as it is, where that is the answer) and b as it is,
        # as printed, alone, on a seed that neither chose nor judged, fixed at round 1
        answer = found.answer
        if answer is None:
            return None
        seed = int(record["check_seed"])
        points = {(size, seed): with_recipe(job, {"seed": seed})
                  for (size, chose), job in point_jobs(record).items() if chose == seeds[0]}
        picked = [(answer.size, answer.name, {**answer.recipe, **COMMAND_SHAPE}, [seed])] + (
            [] if answer.size == b and answer.name == AS_IS else [(b, AS_IS, dict(COMMAND_SHAPE), [seed])])
        return Round(choice_plan.target_jobs(record, points, found.target, picked, CHECK), alone=True)
    else:  # an older sweep's check: the answer and b as it is, as printed, alone, on a seed not timed
        answer = found.answer
        if answer is None:
            return None
        seed = check_seeds(judging)
        picked = [(answer.size, answer.name, {**answer.recipe, **COMMAND_SHAPE}, seed)] + (
            [] if answer.size == b and answer.name == AS_IS else [(b, AS_IS, dict(COMMAND_SHAPE), seed)])
        return Round(choice_plan.target_jobs(record, point_jobs(record), found.target, picked, CHECK),
                     alone=True)
    return choice_plan.target_jobs(record, point_jobs(record), found.target, picked)


def race_limit(found: choice.Choice, leader: choice.Candidate, margin: float | None) -> int | None:
    """Where a grid point around `leader` stops: its samples past the leader's on the seed that chooses by `margin`
    (None: no race, or a leader that did not reach the target)."""
    samples = leader.samples.get(found.seeds[0], math.inf)
    return None if margin is None or not math.isfinite(samples) else math.ceil((1 + margin) * samples)


def _capped(found: choice.Choice, b: int, size: int, name: str, recipe: dict[str, Any],
            race: int | None = None) -> dict[str, Any]:
    """The recipe with the run's limit in samples (target_max_samples): the least of the race's and the cap's; b as
    it is never has one."""
    limits = [limit for limit in (race, found.cap_samples) if limit is not None]
    if (size == b and name == AS_IS) or not limits:
        return recipe
    return {**recipe, "target_max_samples": min(limits)}


def _timed_limit(found: choice.Choice, epochs: int | None, name: str) -> dict[str, Any]:
    """A timed run of one batch size stops after `epochs` epochs (its line's checks); a ramp's runs to the target
    (its time is read at each check: timing.Curve)."""
    if epochs is None or found.train_size is None or name in RAMPS:
        return {}
    return {"target_max_samples": epochs * found.train_size}


def timing_seeds(judging: list[int]) -> list[int]:
    """The seeds the timing round runs each best on: the first TIMED_RUNS of the command's that judge."""
    return judging[:TIMED_RUNS]


def check_seeds(judging: list[int]) -> list[int]:
    """The seed the check runs on: the first of the command's that judges and was not timed (with too few seeds,
    the last that judges)."""
    return [seed for seed in judging if seed not in timing_seeds(judging)][:1] or judging[-1:]


def _bests(found: choice.Choice, b: int, seeds: list[int],
           planned_only: bool = False) -> list[tuple[int, str, dict[str, Any], list[int]]]:
    """Each batch size's best (none where every candidate missed on the first seed), b as it is beside them, and the
    ramps (the proposal from the curves, Smith's rule), each at its first phase's batch; `planned_only`: less a ramp
    whose runs a round could not plan (a round proposes it still, so that a resume plans the round the same)."""
    picked = [(size, best.name, best.recipe, seeds) for size in found.sizes if (best := found.best(size)) is not None]
    if not any(size == b and name == AS_IS for size, name, _, _ in picked):
        picked.append((b, AS_IS, {}, seeds))
    return picked + [(size, name, recipe, seeds) for name, (size, recipe) in found.ramp_recipes.items()
                     if not (planned_only and name in found.refused)]


def added_jobs(sweep_dir: Path, content: dict[str, Any], new: list[int]) -> list[tuple[list[str], str]] | Round | str:
    """`python -m harness.resume SWEEP --add-seeds N`: on each seed of `new`, b as it is and each finalist (every
    batch size's best, each ramp) as target runs against the target already set, as the confirmation ran them, so
    that the answer's times and speed-ups read them beside the seeds that judged (the timing's rates stay the line
    every seed's time is read from); or why there are none (a line)."""
    record = content["choose"]
    found = choice.choose(sweep_files.read(sweep_dir))
    if found is None or found.answer is None:
        return "no answer timed yet; resume the sweep first"
    b, first = record["small_batch"], found.seeds[0]
    points = {(size, seed): with_recipe(job, {"seed": seed})
              for (size, chose), job in point_jobs(record).items() if chose == first for seed in new}
    if recorded(record).timing == "measured":  # timed as the seeds that judged were: as printed, alone
        picked = [(size, name, {**_capped(found, b, size, name, recipe), **COMMAND_SHAPE}, new)
                  for size, name, recipe, _ in _bests(found, b, [], planned_only=True)]
        return Round(choice_plan.target_jobs(record, points, found.target, picked), alone=True)
    picked = [(size, name, _capped(found, b, size, name, recipe), new)
              for size, name, recipe, _ in _bests(found, b, [], planned_only=True)]
    return choice_plan.target_jobs(record, points, found.target, picked)
