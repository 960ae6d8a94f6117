"""+study=choose's later rounds, planned from the rounds before (harness.launch.rounds runs the mechanics): after the
baseline, the candidates at every batch size; then the learning-rate grid around each batch size's leader; then the
confirmation of each batch size's best on the other seeds, beside b as it is (plan.py says what each holds)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.assess import sweep as sweep_files
from harness.studies.choose import plan as choice_plan
from harness.studies.choose import reading as choice
from harness.studies.choose.settings import AS_IS, recorded, stages
from harness.studies.study import NOT_ENDED


def next_round(sweep_dir: Path, content: dict[str, Any], round_: int) -> list[tuple[list[str], str]] | str | None:
    """Round `round_`'s jobs (next_jobs), read from the sweep's files; NOT_ENDED while a run of the round before
    has not ended."""
    sweep = sweep_files.read(sweep_dir)
    if sweep.complete_rounds() < round_ - 1:
        return NOT_ENDED
    return next_jobs(content["choose"], choice.choose(sweep), round_)


def next_jobs(record: dict[str, Any], found: choice.Choice, round_: int) -> list[tuple[list[str], str]] | None:
    """Round `round_`'s jobs as (overrides, arm), [] for a round with none, None when the study is done (or has no
    target to time against: the reading says why)."""
    planned = stages(record)
    if round_ > len(planned) or found.target is None:
        return None
    stage, seeds, b = planned[round_ - 1], found.seeds, record["small_batch"]
    if stage == "candidates":
        picked = [(size, c["name"], c["recipe"], seeds[:1]) for size in found.sizes
                  for c in record["candidates"][str(size)]]
    elif stage == "grid":
        picked = []
        for size in found.sizes:
            leader = found.leader(size)
            if leader is None:
                continue
            for factor in recorded(record).lr_grid:
                recipe = {**leader.recipe, "lr_factor": choice.grid_lr(leader.recipe, record, factor)}
                picked.append((size, f"{leader.name}_x{factor:g}", recipe, seeds[:1]))
    else:  # confirm: each batch size's best on the other seeds, and b as it is there (what the speed-up is over)
        picked = [(size, best.name, best.recipe, seeds[1:]) for size in found.sizes
                  if (best := found.best(size)) is not None]
        if not any(size == b and name == AS_IS for size, name, _, _ in picked):
            picked.append((b, AS_IS, {}, seeds[1:]))
    return choice_plan.target_jobs(record, choice_plan.point_jobs(record), found.target, picked)
