"""+study=recover's search space (`recover.space`): which keys are ranges, which log-uniform, which choices, the
override each sets, and a recipe read back from a job's overrides. Plain data, imported by the plan, the guided
round and the reading alike (none of them needs the others' imports)."""
from __future__ import annotations

from typing import Any

LOG = ("lr_factor", "momentum", "weight_decay")  # ranges drawn log-uniformly
CHOICES = ("lr_schedule", "optimizer", "ghost_batch_size", "precise_bn")
RANGES = ("lr_factor", "warmup_epochs", "momentum", "weight_decay", "label_smoothing", "bn_momentum")
BATCH_NORM_KEYS = ("bn_momentum", "ghost_batch_size", "precise_bn")
INTEGERS = ("ghost_batch_size", "precise_bn")  # choices whose values are numbers of samples
OVERRIDE = {"bn_momentum": "model.bn_momentum", "ghost_batch_size": "model.ghost_batch_size"}  # space key -> key


def recipe_of_job(job: list[str], base: list[str], space: dict[str, list]) -> dict[str, Any]:
    """A recipe read back from its job's overrides (`base`: the job it changed, B's own): each key of `space`, null
    where the job keeps the command's own; a range's value a float, ghost_batch_size and precise_bn ints, a choice
    its text."""
    given = dict(o.split("=", 1) for o in job if o not in base)
    found = {}
    for name in space:
        key = OVERRIDE.get(name, name)
        text = given.get(key)
        found[key] = None if text is None else int(text) if name in INTEGERS else \
            text if name in CHOICES else float(text)
    return found
