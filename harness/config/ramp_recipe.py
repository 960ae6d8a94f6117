"""What Smith's rule (harness.config.smith) and Seesaw (harness.config.seesaw) share: both turn the falls of b's own
decaying schedule into a growing batch from b, up to a cap, and write the result as a recipe on b's command.

The cap is the training set (per replica under per_replica_batch) and a study's largest batch; b's peak is what its
command gives it (lr x lr_factor x its lr_scaling at b), which the ramp holds with lr_scaling none. A phase is
[start, batch, lr_factor], lr_factor giving its rate as a fixed run at b's settings; where every phase has b's, the
schedule is written as [start, batch] pairs and the recipe's lr_factor gives the rate. The recipe is planned as a
user's command is (harness.config.proposals) and refused with the planner's own line. Pure: configs in, recipes
out.
"""
from __future__ import annotations

import math
from typing import Any

from harness.config import proposals
from harness.config.batching import LR_FACTORS
from harness.config.schema import RunConfig


def limit(small: RunConfig, train_size: int, cap: int | None) -> int:
    """The largest batch (as configured) a ramp from `small` may reach: the training set's, and `cap`."""
    replicas = max(small.device.gpus, 1)
    found = train_size // replicas if small.train.per_replica_batch else train_size // replicas * replicas
    return found if cap is None else min(found, cap)


def peak_factor(small: RunConfig) -> float:
    """b's peak learning rate over lr: its lr_factor under its lr_scaling at its global batch."""
    train, replicas = small.train, max(small.device.gpus, 1)
    global_b = train.batch_size * replicas if train.per_replica_batch else train.batch_size
    return train.lr_factor * LR_FACTORS[train.lr_scaling](global_b / train.base_batch_size)


def nearest_epoch(position: float) -> int:
    """The whole epoch nearest `position` (in epochs), a tie to the earlier."""
    return math.ceil(position - 0.5)


def at_cap(small: RunConfig, train_size: int, cap: int | None) -> str:
    """Why a ramp from b has no room to grow (b at its cap), in words."""
    what = f"batch {cap}" if cap is not None and cap < train_size else f"the {train_size} training samples"
    return f"room for a larger batch: batch {small.train.batch_size} is at its cap already, {what}"


def as_recipe(small: RunConfig, train_size: int, phases: list[list], epochs: int,
              run_as: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """(The recipe of `phases` ([start, batch, lr_factor] each) on b's command, or None; why not, or None): planned
    as a user's command is, with `epochs` and the training keys `run_as` a study runs it with."""
    if small.train.warmup_epochs > phases[1][0]:
        return None, f"a warm-up (warmup_epochs={small.train.warmup_epochs:g}) within the first {phases[1][0]} epochs"
    shown = [[start, batch, float(f"{factor:.6g}")] for start, batch, factor in phases]
    if all(phase[2] == shown[0][2] for phase in shown):  # the rate held throughout: the run's lr_factor gives it
        shown = [phase[:2] for phase in shown]
    text = ",".join("[" + ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in phase) + "]"
                    for phase in shown)
    found = {"batch_schedule": f"[{text}]", "lr_schedule": "constant", "lr_scaling": "none",
             "lr_factor": float(f"{phases[0][2]:.6g}")}
    why = proposals.why_not(small, train_size, **{**found, "batch_schedule": shown, "epochs": epochs,
                                                  **(run_as or {})})
    if why is not None:
        return None, f"phases this command can run ({why})"
    return found, None
