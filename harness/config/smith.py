"""Smith's rule (Smith, Kindermans, Ying & Le, ICLR 2018, "Don't decay the learning rate, increase the batch size"):
wherever a schedule divides the learning rate by a factor, multiply the batch by it instead; once the batch is at
its largest, the falls left divide the learning rate again, as the paper's runs do after reaching their largest batch.

A command with `lr_schedule=step` (the rate /10 at half and at three quarters of its planned samples) becomes a
`batch_schedule` from its own batch b, each fall at the epoch nearest it (a tie to the earlier; two falls on one
epoch are one fall of 100) in the epochs the compared run trains. At each fall the batch grows tenfold up to the cap
(the training set, and a study's largest batch); what the cap leaves of the fall (32 to a cap of 128: x4 of x10)
falls on the learning rate, so that lr / batch, the noise scale the rule keeps, falls tenfold at every fall as the
decaying run's does. Each phase is [start, batch, lr_factor], lr_factor giving its rate as a fixed run at b's
settings (lr_scaling none, lr_schedule constant, b's peak throughout until a fall); the warm-up as the command's.
A smooth decay (cosine, linear) has no fall to turn into a batch, and a constant rate none at all: for them the rule
says why not. A ramp the command's devices and model cannot run (a phase's batch that steps_per_execution does not
divide, a model whose batch norm is built for one batch) is planned as a user's command is
(harness.config.proposals) and refused with the planner's own line. Pure: a config in, a recipe (keyed as
overrides) or the reason out.
"""
from __future__ import annotations

from typing import Any

from harness.config import ramp_recipe
from harness.config.schema import RunConfig

NAME = "smith"
FACTOR = 10  # each fall of lr_schedule=step


def why_not(small: RunConfig) -> str | None:
    """Why the command cannot be converted (None: it can)."""
    train = small.train
    if train.lr_schedule in ("cosine", "linear"):
        return (f"a step schedule (lr_schedule=step), whose tenfold falls become tenfold batches; lr_schedule="
                f"{train.lr_schedule} decays smoothly, with no fall to turn into a batch")
    if train.lr_schedule != "step":
        return f"a step schedule (lr_schedule=step); lr_schedule={train.lr_schedule} has no fall to turn into a batch"
    if train.budget == "steps":
        return "an epoch budget (budget=epochs): a batch schedule runs whole epochs"
    if train.batch_schedule is not None:
        return "a fixed batch to start from; the command has a batch_schedule already"
    return None


def falls(epochs: int) -> list[tuple[int, int]]:
    """(epoch, factor) of each fall of lr_schedule=step over `epochs`, at the whole epoch nearest it (half and three
    quarters of the run; a tie to the earlier): falls on one epoch are one fall of their product; none at epoch 0."""
    found: dict[int, int] = {}
    for share in (0.5, 0.75):
        epoch = ramp_recipe.nearest_epoch(epochs * share)
        found[epoch] = found.get(epoch, 1) * FACTOR
    return [(epoch, factor) for epoch, factor in sorted(found.items()) if 0 < epoch < epochs]


def recipe(small: RunConfig, train_size: int, cap: int | None = None, epochs: int | None = None,
           run_as: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """(Smith's recipe from the command `small`, keyed as overrides, or None; why not, or None); `cap`: the largest
    batch (as configured) the ramp may reach, besides the training set (+study=recover's B, +study=choose's largest
    batch size); `epochs`: those the run it is compared with trains (the command's by default); `run_as`: the
    training keys the study runs it with besides (+study=choose's target)."""
    reason = why_not(small)
    if reason is not None:
        return None, reason
    epochs, largest = epochs or small.train.epochs, ramp_recipe.limit(small, train_size, cap)
    phases = [[0, small.train.batch_size, ramp_recipe.peak_factor(small)]]
    for start, fall in falls(epochs):
        batch = min(phases[-1][1] * fall, max(largest, phases[-1][1]))
        phases.append([start, batch, phases[-1][2] * batch / (phases[-1][1] * fall)])  # lr / batch falls `fall`
    if len(phases) < 2:
        return None, f"a fall at a whole epoch inside epochs={epochs}"
    if phases[1][1] == phases[0][1]:
        return None, ramp_recipe.at_cap(small, train_size, cap)
    return ramp_recipe.as_recipe(small, train_size, phases, epochs, run_as)
