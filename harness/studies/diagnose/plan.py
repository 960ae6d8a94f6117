"""+study=diagnose: the arms of a diagnosis, computed from the user's own command.

`python -m harness +study=diagnose batch_size=b,B [the user's data, model, epochs, optimizer, lr...] -m` runs, for
every seed of the command, the user's observation as it is at every batch size (`as_is`) and, at the largest
global batch B, arms that each apply some of these pieces:

- `steps`: as many updates as the smallest global batch b takes in the command's epochs E, E * ceil(N_train / b)
  (budget=steps; computed here from the training-set size, so it stays b's count under per_replica_batch);
- `lr`: the learning rate scaled from b (diagnose.lr_scaling: sqrt, or linear with a warm-up of
  diagnose.warmup_epochs of b's epochs);
- `ghost`: ghost batch norm in chunks of the samples b's batch norm normalised together, for the built-in models
  with batch norm only.

By default (diagnose.attribution=shapley) the arms are every non-empty subset of the pieces (2^k - 1 runs per
seed at B), so that harness.studies.diagnose.parts can give Shapley values that depend on no order.
diagnose.attribution=ladder runs only the ladder steps, steps_lr, steps_lr_ghost, each adding one piece to the
one before (Hoffer, Hubara & Soudry 2017 ran it by hand): k runs, but each part depends on that order. Stale
batch-norm statistics cost no arm: every run of a model with batch norm records its accuracies with recomputed
statistics. The first job also checks the data (diagnose.check_data), in its run process, on the arrays as that
run feeds them.
Pure: the plan's jobs and RunConfigs in, the new jobs and what sweep.json records out (no Hydra).
"""
from __future__ import annotations

import math
from typing import Any

from harness.config import pairs
from harness.config.pairs import ghost_chunk, global_batch
from harness.config.schema import RunConfig
from harness.data import registry as datasets
from harness.fields import ConfigError
from harness.studies.diagnose.settings import Settings

PIECES = ("steps", "lr", "ghost")  # what an arm adds at the large batch, in the ladder's order
LADDER = ("steps", "steps_lr", "steps_lr_ghost")
AS_IS = "as_is"
# the keys the arms set: given on the command, they would change what an arm means
ARM_KEYS = ("budget", "budget_steps", "lr_scaling", "base_batch_size", "model.ghost_batch_size", "warmup_epochs")


def _check_command(jobs: list[list[str]], run_configs: list[RunConfig], given: dict[str, str]) -> pairs.Pairs:
    """The command's points (harness.config.pairs), once no key the arms set is given."""
    for key in ARM_KEYS:
        if key in given:
            raise ConfigError(key, given[key].split("=", 1)[1], "left to +study=diagnose, whose arms set "
                              f"{', '.join(ARM_KEYS)}; diagnose.lr_scaling and diagnose.warmup_epochs choose how")
    return pairs.of_command(jobs, run_configs, "diagnose", "diagnosis",
                            "e.g. batch_size=8,64: it splits the drop from the smallest to the largest")


def _arm_overrides(pieces: tuple[str, ...], small: RunConfig, large: RunConfig, settings: Settings,
                   ghost: int | None) -> list[str]:
    """The overrides that turn the large batch's as-is job into the arm with these pieces."""
    b, big, train = global_batch(small), global_batch(large), small.train
    size = datasets.expected_train_size(small.data, train.imbalance, train.train_fraction, train.tune_fraction)
    out: dict[str, str] = {}
    if "steps" in pieces:
        out["budget"] = "steps"
        if size is None:  # known once loaded (TFDS): the run takes E * ceil(N / base_batch_size), the same count
            out["base_batch_size"] = str(b)
        else:
            out["budget_steps"] = str(train.epochs * math.ceil(size / b))
    if "lr" in pieces:
        out["lr_scaling"], out["base_batch_size"] = settings.lr_scaling, str(b)
        if settings.lr_scaling == "linear" and settings.warmup_epochs > 0:
            if size is None:  # the ratio of the epochs' steps, exact when both batches divide the training set
                warmup = settings.warmup_epochs * big / b
            else:  # b's warm-up steps, in the large batch's epochs (the run rounds epochs x steps per epoch)
                warmup = round(settings.warmup_epochs * math.ceil(size / b)) / math.ceil(size / big)
            out["warmup_epochs"] = repr(float(warmup))
    if "ghost" in pieces:
        out["model.ghost_batch_size"] = str(ghost)
    return [f"{key}={value}" for key, value in out.items()]


def arm_name(pieces) -> str:
    """`as_is`, or the pieces in the ladder's order: steps, steps_lr, steps_lr_ghost (Shapley: lr, steps_ghost...)."""
    return "_".join(p for p in PIECES if p in pieces) or AS_IS


def plan(jobs: list[list[str]], run_configs: list[RunConfig], settings: Settings,
         given: dict[str, str]) -> tuple[list[list[str]], dict[str, Any]]:
    """(every job of the diagnosis, what sweep.json records of it) from the command's own jobs and configs; `given`:
    the command's overrides by key. Raises ConfigError for a command that cannot be diagnosed."""
    points = _check_command(jobs, run_configs, given)
    b, big, seeds = points.small_batch, points.large_batch, points.seeds
    ghost, no_ghost = ghost_chunk(points.large(), points.small())
    pieces = [p for p in PIECES if p != "ghost" or ghost is not None]
    if settings.attribution == "shapley":
        arms = [tuple(p for p in pieces if mask >> pieces.index(p) & 1) for mask in range(1, 2 ** len(pieces))]
        arms.sort(key=len)
    else:
        arms = [tuple(pieces[:k]) for k in range(1, len(pieces) + 1)]
    planned, names = [], []
    for seed in seeds:
        for size in points.as_is_order:
            planned.append(points.job(size, seed))
            names.append(AS_IS)
        small, large = points.small(seed), points.large(seed)
        for arm in arms:
            planned.append([*points.job(big, seed), *_arm_overrides(arm, small, large, settings, ghost)])
            names.append(arm_name(arm))
    planned[0].append("diagnose.check_data=true")  # the first job checks the data before it trains
    record = {"small_batch": b, "large_batch": big, "seeds": seeds, "attribution": settings.attribution,
              "ladder": [arm_name(pieces[:k]) for k in range(1, len(pieces) + 1)],
              "arms": {str(num): name for num, name in enumerate(names)},
              "left_out": {} if no_ghost is None else {"ghost_batch_norm": no_ghost},
              "settings": settings.thresholds()}
    return planned, {"diagnose": record}
