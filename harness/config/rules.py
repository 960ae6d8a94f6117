"""The published rules for training at a larger batch, each a recipe at B from b's setting, keyed as command-line
overrides: +study=recover's candidates of round 1 (`recover.rules`), and every batch size's first candidates in
+study=choose:

- `linear` (Goyal et al. 2017): b's effective learning rate x B/b, warmed up linearly over min(5, E/5) epochs
  (Goyal et al. warmed up over 5 epochs of 90; E/5 keeps a short run mostly at its peak);
- `sqrt` (Hoffer et al. 2017): b's effective learning rate x sqrt(B/b), the same warm-up, and with a built-in model
  with batch norm that is not synchronized ghost batch norm in chunks of b's per-device batch;
- `adam_sde` (Malladi et al. 2022, the square-root rule for adaptive methods) for the Adam family, with k = B/b:
  the learning rate x sqrt(k), 1 - beta_1 and 1 - beta_2 each x k, epsilon / sqrt(k); beta_1 kept within
  [0, 0.999] and beta_2 within [0.95, 0.999] (Malladi et al.'s floor), each clipping recorded.

- `ramp` (+study=recover): a batch schedule from b to B, b for the first tenth of the epochs (at least one), then B
  at the sqrt rule's learning rate: b's accuracy at mostly B's speed (the critical batch size is small early,
  Merrill et al. 2025); `smith` (Smith et al. 2018), for a command with lr_schedule=step: each tenfold fall of its
  learning rate a tenfold batch instead, capped at B, what the cap leaves a fall of the rate (harness.config.smith);
  `seesaw` (Meterez et al. 2025), for lr_schedule=cosine or linear: each halving of its rate a doubling of the batch
  with the rate x 1/sqrt 2, capped at B (harness.config.seesaw). Each runs from b's job.

- `precise_bn` (Wu & Johnson 2021, "Rethinking 'Batch' in BatchNorm"), for a model with batch norm: the linear
  rule, and before each evaluation every batch-norm layer's statistics recomputed for the current weights on
  PRECISE_BN_SAMPLES training samples and kept (the run key `precise_bn`): the statistics no longer lag at all.

With batch norm in the model (any model: harness.models.batch_norm), every other rule also scales the batch-norm
momentum by the EMA rule (Busbridge et al. 2023, "How to Scale Your EMA"): the moving statistics are an exponential
average over steps, and B makes k = B/b times fewer steps per epoch, so the momentum rho_b becomes rho_b^k, which
keeps the average's horizon in samples. rho_b is the command's `model.bn_momentum`, else the largest momentum among
the model's layers; rho_b^k is kept at or above BN_MOMENTUM_FLOOR, the clipping recorded.

"b's effective learning rate" is the peak b's run has (lr x lr_factor x its lr_scaling at b): a command with
lr_scaling=linear already scales B's, and the rule's lr_factor says so. Pure: configs in, recipes out.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from harness.config import proposals, seesaw, smith
from harness.config.batching import BN_MOMENTUM_FLOOR, LR_FACTORS, ema_momentum
from harness.config.pairs import global_batch
from harness.config.schema import RunConfig
from harness.data import registry as datasets

# the Adam family, whose coefficients' defaults (Keras's, the same in each class: tests/run/test_recipe.py checks
# them) the adam_sde rule scales
ADAM_FAMILY = ("adam", "adamw", "nadam", "lamb")
ADAM_DEFAULTS = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
MAX_BETA = 0.999
BETA_2_FLOOR = 0.95
RAMP_RULES = ("ramp", "smith", "seesaw")  # a batch schedule from b to B, run from b's job
CONVERSIONS = {smith.NAME: smith, seesaw.NAME: seesaw}  # the ramps that convert the command's own decay
RAMP_SHARE = 10  # the ramp rule's first phase: this share of the epochs (at least one) at b
# precise BN's training samples in the precise_bn rule: the recomputed-statistics columns' own subset
# (harness.run.precise_bn.SUBSET; tests/studies/recover/test_plan.py checks they agree)
PRECISE_BN_SAMPLES = 1024
# why a rule about batch norm does not apply
NO_BATCH_NORM = "a model with batch norm, and this one has none"
UNKNOWN = ("a model whose batch-norm layers are known before its first run (this data's shape is known only once "
           "loaded)")


@dataclass(frozen=True)
class Rule:
    name: str
    recipe: dict[str, Any]                               # keyed as overrides, as a trial's
    clipped: list[str] = field(default_factory=list)     # what the rule asked that was clipped, in words


def warmup_epochs(epochs: int) -> float:
    """The warm-up the linear and square-root rules use: min(5, E/5) epochs."""
    return min(5.0, epochs / 5)


def _lr_factor(small: RunConfig, large: RunConfig, multiple: float) -> float:
    """The lr_factor at B whose peak is b's effective learning rate x `multiple` (lr_scaling undone)."""
    train = small.train
    scale = LR_FACTORS[train.lr_scaling]
    at_small = scale(global_batch(small) / train.base_batch_size)
    at_large = scale(global_batch(large) / train.base_batch_size)
    return _round(large.train.lr_factor * multiple * at_small / at_large)


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def applies(name: str, large: RunConfig, batch_norm=None, small: RunConfig | None = None) -> str | None:
    """Why rule `name` does not apply to this command (None: it does); `batch_norm`: the model's
    (harness.models.batch_norm.BatchNorm, None where unknown); `small`: b's config (the ramps start from it)."""
    if name == "adam_sde" and large.train.optimizer not in ADAM_FAMILY:
        return f"the Adam family only ({', '.join(sorted(ADAM_FAMILY))}), not optimizer={large.train.optimizer}"
    if name == "precise_bn" and (batch_norm is None or not batch_norm.layers):
        return UNKNOWN if batch_norm is None else NO_BATCH_NORM
    if name in RAMP_RULES:
        return _ramp_applies(name, small or large, large)
    return None


def _ramp_applies(name: str, small: RunConfig, large: RunConfig) -> str | None:
    train = large.train
    if train.budget == "steps":
        return "an epoch budget (budget=epochs): a batch schedule runs whole epochs"
    if train.batch_schedule is not None:
        return "a fixed batch to start from; the command has a batch_schedule already"
    if large.device.backend == "jax" and max(large.device.gpus, 1) > 1 and large.model.batch_norm \
            and not large.model.sync_batchnorm and large.model.ghost_batch_size is None:
        return "not a built-in model with per-replica batch norm on several JAX devices (its ghost batch is built in)"
    size = _train_size(small)
    if name == "ramp":
        if train.epochs < 2:
            return "two epochs or more (a first one at b, then B)"
        if size is None:  # planned once the data is loaded: a round refuses a run that cannot be planned
            return None
        recipe = ramp_rule(name, small, large).recipe
        why = proposals.why_not(small, size, **{**recipe, "batch_schedule": json.loads(recipe["batch_schedule"])})
        return None if why is None else f"phases this command can run ({why})"
    return "a training set whose size is known before its first run" if size is None else \
        CONVERSIONS[name].recipe(small, size, cap=large.train.batch_size)[1]


def _train_size(cfg: RunConfig) -> int | None:
    train = cfg.train
    return datasets.expected_train_size(cfg.data, train.imbalance, train.train_fraction, train.tune_fraction)


def ramp_rule(name: str, small: RunConfig, large: RunConfig) -> Rule:
    """A ramp from b to B, run from b's job: `ramp` (b for the first tenth of the epochs, at least one, then B at
    the sqrt rule's learning rate, the batch-norm momentum by the EMA rule at the switch: the critical batch size is
    small early, Merrill et al. 2025), `smith` (the command's step schedule's falls as tenfold batches, capped at
    B, and the falls the cap leaves on the rate: harness.config.smith) or `seesaw` (its cosine or linear decay's
    halvings as doublings of the batch, the rate x 1/sqrt 2 at each, capped at B: harness.config.seesaw)."""
    b = small.train.batch_size
    if name in CONVERSIONS:
        recipe, _ = CONVERSIONS[name].recipe(small, _train_size(small), cap=large.train.batch_size)
        return Rule(name, {"batch_size": b, **recipe})
    epochs = large.train.epochs
    switch = max(1, math.ceil(epochs / RAMP_SHARE))
    phases = [[0, b, small.train.lr_factor], [switch, large.train.batch_size,
                                                _lr_factor(small, large, math.sqrt(global_batch(large) /
                                                                                   global_batch(small)))]]
    recipe = {"batch_size": b, "batch_schedule": "[" + ",".join(f"[{s},{n},{f:g}]" for s, n, f in phases) + "]"}
    if small.train.warmup_epochs > switch:
        recipe["warmup_epochs"] = float(switch)
    return Rule(name, recipe)


def rule(name: str, small: RunConfig, large: RunConfig, ghost: int | None, rho: float | None = None) -> Rule:
    """Rule `name`'s recipe at B (`ghost`: b's batch-norm chunk for a built-in model with batch norm, else None;
    `rho`: b's batch-norm momentum for a model with batch norm, which every rule scales by the EMA rule, else None)."""
    ratio, epochs = global_batch(large) / global_batch(small), large.train.epochs
    if name in RAMP_RULES:  # the EMA rule at each phase is the run's own (harness.config.ramp)
        return ramp_rule(name, small, large)
    if name == "precise_bn":  # the statistics recomputed before each evaluation: their momentum no longer matters
        return Rule(name, {"lr_factor": _lr_factor(small, large, ratio), "warmup_epochs": warmup_epochs(epochs),
                           "precise_bn": PRECISE_BN_SAMPLES})
    if name == "linear":
        found = Rule(name, {"lr_factor": _lr_factor(small, large, ratio), "warmup_epochs": warmup_epochs(epochs)})
    elif name == "sqrt":
        recipe = {"lr_factor": _lr_factor(small, large, math.sqrt(ratio)), "warmup_epochs": warmup_epochs(epochs)}
        if ghost is not None:
            recipe["model.ghost_batch_size"] = ghost
        found = Rule(name, recipe)
    elif name == "adam_sde":
        found = _adam_sde(small, large, ratio)
    else:
        raise ValueError(f"unknown rule {name!r}")
    if rho is None:
        return found
    momentum, clipped = ema_momentum(rho, ratio)
    return Rule(name, {**found.recipe, "model.bn_momentum": momentum}, found.clipped + clipped)


def _adam_sde(small: RunConfig, large: RunConfig, k: float) -> Rule:
    train = large.train
    beta_1 = ADAM_DEFAULTS["beta_1"] if train.momentum is None else train.momentum
    beta_2 = ADAM_DEFAULTS["beta_2"] if train.beta_2 is None else train.beta_2
    epsilon = ADAM_DEFAULTS["epsilon"] if train.epsilon is None else train.epsilon
    clipped = []

    def scaled(name: str, beta: float, low: float) -> float:
        wanted = 1.0 - k * (1.0 - beta)
        kept = min(max(wanted, low), MAX_BETA)
        if kept != wanted:
            clipped.append(f"{name} {wanted:.4g} clipped to {kept:g}")
        return _round(kept)

    found = {"lr_factor": _lr_factor(small, large, math.sqrt(k)), "momentum": scaled("beta_1", beta_1, 0.0),
             "beta_2": scaled("beta_2", beta_2, BETA_2_FLOOR), "epsilon": _round(epsilon / math.sqrt(k))}
    return Rule("adam_sde", found, clipped)
