"""Smith's rule (Smith, Kindermans, Ying & Le, ICLR 2018, "Don't decay the learning rate, increase the batch size"):
wherever a schedule divides the learning rate by a factor, multiply the batch by it instead, the learning rate held.

A command with `lr_schedule=step` (the rate /10 at half and at three quarters of its planned steps) becomes a
`batch_schedule` from its own batch b: b x 10 from the epoch nearest the first fall, b x 100 from the one nearest
the second, each capped by the training set (a phase the cap leaves no larger than the one before is dropped), the
learning rate b's peak throughout (lr_scaling none, lr_schedule constant) and the warm-up as the command's. A smooth
decay (cosine, linear) has no fall to turn into a batch, and a constant rate none at all: for them the rule says
why not. A ramp the command's devices and model cannot run (a phase's batch that steps_per_execution does not
divide, a model whose batch norm is built for one batch) is planned as a user's command is (harness.config.proposals)
and refused with the planner's own line. Pure: a config in, a recipe (keyed as overrides) or the reason out.
"""
from __future__ import annotations

from typing import Any

from harness.config import proposals
from harness.config.batching import LR_FACTORS
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


def recipe(small: RunConfig, train_size: int, cap: int | None = None,
           run_as: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """(Smith's recipe from the command `small`, keyed as overrides, or None; why not, or None); `cap`: the largest
    batch (as configured) the ramp may reach, besides the training set (+study=recover's B); `run_as`: the training
    keys the study runs it with besides (+study=choose's target and its cap in epochs)."""
    reason = why_not(small)
    if reason is not None:
        return None, reason
    train, replicas = small.train, max(small.device.gpus, 1)
    epochs, b = train.epochs, train.batch_size
    limit = train_size // replicas if train.per_replica_batch else train_size // replicas * replicas
    limit = limit if cap is None else min(limit, cap)
    phases = [[0, b]]
    for start in (round(epochs / 2), round(3 * epochs / 4)):
        batch = min(phases[-1][1] * FACTOR, limit)
        if 0 < start < epochs and start > phases[-1][0] and batch > phases[-1][1]:
            phases.append([start, batch])
    if len(phases) < 2:
        if b >= limit:
            what = f"batch {cap}" if cap is not None and cap < train_size else f"the {train_size} training samples"
            return None, f"room for a larger batch: batch {b} is at its cap already, {what}"
        return None, f"a fall at a whole epoch inside epochs={epochs}"
    if train.warmup_epochs > phases[1][0]:
        return None, f"a warm-up (warmup_epochs={train.warmup_epochs:g}) within the first {phases[1][0]} epochs"
    global_b = b * replicas if train.per_replica_batch else b
    factor = train.lr_factor * LR_FACTORS[train.lr_scaling](global_b / train.base_batch_size)  # b's peak / lr
    found = {"batch_schedule": "[" + ",".join(f"[{start},{batch}]" for start, batch in phases) + "]",
             "lr_schedule": "constant", "lr_scaling": "none", "lr_factor": float(f"{factor:.6g}")}
    why = proposals.why_not(small, train_size, **{**found, "batch_schedule": phases, **(run_as or {})})
    if why is not None:
        return None, f"phases this command can run ({why})"
    return found, None
