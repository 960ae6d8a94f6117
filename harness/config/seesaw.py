"""Seesaw (Meterez, Morwani, Wu, Oncescu, Pehlevan & Kakade 2025, arXiv 2510.14717): Smith's rule for a smooth
decay. Wherever b's cosine (or linear) decay would halve the learning rate, double the batch and multiply the rate
by 1/sqrt(2) instead: the rate over the square root of the batch, what Adam's square-root rule keeps, follows the
decaying run's (it does not keep the rate over the batch, as Smith's rule does for SGD). They report cosine's loss at
equal FLOPs with about 36% less wall-clock, below the critical batch size.

A command with `lr_schedule=cosine` or `linear` becomes a `batch_schedule` from its own batch b: each halving of
b's decaying rate (after its warm-up, in the epochs the compared run trains) at the whole epoch nearest it (a tie
to the earlier; halvings on one epoch are one of their product), where the batch doubles up to the cap (the
training set, and a study's largest batch) and each phase runs at the decaying run's rate at its start times
sqrt(batch / b): once the batch is at its cap, the halvings left fall on the rate, as in Smith's rule. Each phase
holds its rate (lr_schedule constant, lr_scaling none; [start, batch, lr_factor]); the warm-up is the command's.
A step schedule has Smith's rule, a constant rate no decay at all: for them Seesaw says why not. Pure: a config in,
a recipe (keyed as overrides) or the reason out (harness.config.ramp_recipe).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from harness.config import ramp_recipe
from harness.config.batching import plan_batches, plan_schedule
from harness.config.schema import RunConfig

NAME = "seesaw"
SHAPES = ("cosine", "linear")


def why_not(small: RunConfig) -> str | None:
    """Why the command cannot be converted (None: it can)."""
    train = small.train
    if train.lr_schedule not in SHAPES:
        return (f"a smooth decay (lr_schedule=cosine or linear), whose halvings become doublings of the batch; "
                f"lr_schedule={train.lr_schedule} has none" + (" (Smith's rule converts its falls)"
                                                               if train.lr_schedule == "step" else ""))
    if train.budget == "steps":
        return "an epoch budget (budget=epochs): a batch schedule runs whole epochs"
    if train.batch_schedule is not None:
        return "a fixed batch to start from; the command has a batch_schedule already"
    return None


def progress_at(shape: str, halvings: int) -> float:
    """Where in the decay (0 to 1) its factor reaches 2^-halvings."""
    factor = 0.5 ** halvings
    return math.acos(2 * factor - 1) / math.pi if shape == "cosine" else 1 - factor


def halvings(small: RunConfig, train_size: int, epochs: int) -> list[tuple[int, int]]:
    """(epoch, doublings) of b's decaying rate over `epochs`: each halving at the whole epoch nearest it; halvings
    on one epoch are one of their product; none at epoch 0 or at the run's end."""
    schedule = _schedule(small, train_size, epochs)
    per_epoch = schedule.planned_steps / epochs
    warm, last = schedule.warmup_steps, schedule.planned_steps - 1
    found: dict[int, int] = {}
    for k in range(1, 64):
        epoch = ramp_recipe.nearest_epoch((warm + progress_at(schedule.shape, k) * (last - warm)) / per_epoch)
        if epoch >= epochs:
            break
        found[epoch] = found.get(epoch, 0) + 1
    return [(epoch, doublings) for epoch, doublings in sorted(found.items()) if epoch > 0]


def _schedule(small: RunConfig, train_size: int, epochs: int):
    """b's fixed-batch schedule over `epochs` (harness.config.batching)."""
    train = dataclasses.replace(small.train, epochs=epochs)
    plan = plan_batches(train.batch_size, train.per_replica_batch, max(small.device.gpus, 1), train_size)
    return plan_schedule(plan, train)


def recipe(small: RunConfig, train_size: int, cap: int | None = None, epochs: int | None = None,
           run_as: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """(Seesaw's recipe from the command `small`, keyed as overrides, or None; why not, or None); `cap`, `epochs`
    and `run_as` as harness.config.smith.recipe's."""
    reason = why_not(small)
    if reason is not None:
        return None, reason
    epochs, largest, b = epochs or small.train.epochs, ramp_recipe.limit(small, train_size, cap), small.train.batch_size
    schedule, peak = _schedule(small, train_size, epochs), ramp_recipe.peak_factor(small)
    per_epoch = schedule.planned_steps // epochs
    phases, doubled = [[0, b, peak]], 0
    for start, doublings in halvings(small, train_size, epochs):
        doubled += doublings
        batch = max(min(b * 2 ** doubled, largest), b)
        decayed = schedule.lr_at(start * per_epoch) / schedule.peak_lr  # b's rate at the phase's start, over its peak
        phases.append([start, batch, peak * decayed * math.sqrt(batch / b)])  # lr / sqrt(batch) = b's lr / sqrt(b)
    if len(phases) < 2:
        return None, f"a halving of the rate at a whole epoch inside epochs={epochs}"
    if phases[1][1] == b:
        return None, ramp_recipe.at_cap(small, train_size, cap)
    return ramp_recipe.as_recipe(small, train_size, phases, epochs, run_as)
