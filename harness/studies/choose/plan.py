"""+study=choose's plan: round 1 from the user's own command, and the jobs of the later rounds from what the rounds
before found (rounds.py decides which).

`python -m harness +study=choose batch_size=8,32,128,512 [the user's data, model, epochs, optimizer, lr...] -m`
holds out the same tuning slice in every run (`choose.tune_fraction`) and goes through these stages, one round
each:

- `baseline` (without `choose.target`): the smallest batch b as the command sets it, on every seed, for the
  command's epochs E; the target is then the lowest seed's final tune_acc less `choose.tolerance`, one every seed of
  b reached;
- `candidates`: at every batch size, on the first seed, the command as it is and each published rule
  (harness.config.rules, from b's setting; at b each that changes anything there, a warm-up or precise BN), every run stopped the first time its tuning slice reaches the target
  (`target_tune_acc`) or at the cap (`choose.max_epochs`, by default 3E);
- `grid`: at every batch size, the best candidate's learning rate x each factor of `choose.lr_grid`;
- `confirm`: every batch size's best candidate on the other seeds, and b as it is, each run as printed and alone:
  its seconds to the target are that seed's time (choose.timing "measured");
- `check`: the answer and b as it is, as printed and alone, on the seed after the command's last (`check_seed`).

The best candidate is the one with the fewest steps to the target on the first seed, a run that missed it never
reaching it (harness.assess.targets); validation plays no part. Pure: the plan's jobs and RunConfigs in, the new
jobs and what sweep.json records out (no Hydra, no backend).
"""
from __future__ import annotations

import math
from typing import Any

from harness.config import batch_norm as command_batch_norm
from harness.config import pairs, rules, seesaw, smith
from harness.config.overrides import with_recipe
from harness.config.schema import RunConfig
from harness.data import registry as datasets
from harness.fields import ConfigError
from harness.studies.choose.settings import AS_IS, BASELINE, COMMAND_SHAPE, Settings, arm

GIVEN = ("target_tune_acc", "budget", "budget_steps")  # what every target run sets, not the command


def _check_command(kit: pairs.Pairs, settings: Settings, given: dict[str, str]) -> None:
    for key in GIVEN:
        if key in given:
            raise ConfigError(key, given[key].split("=", 1)[1], "left to +study=choose, which stops every run at its "
                              "target or at choose.max_epochs: choose.target sets the target")
    counts = datasets.train_class_counts(kit.small().data)  # a batch above the training set: refused by every run
    chance = None if counts is None else 1 / len(counts)
    if settings.target is not None and chance is not None and settings.target <= chance:
        raise ConfigError("choose.target", settings.target, f"a tuning accuracy in (chance, 1): above {chance:.3g} "
                          f"for {len(counts)} classes")


def candidates(kit: pairs.Pairs, settings: Settings) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str], Any]:
    """({size: [{name, recipe, clipped}]}: the command as it is and each rule that applies, at every batch size, b's
    own included wherever a rule changes anything at ratio 1 (a warm-up, precise BN: b at its best has the candidates
    every larger batch size has), {rule: why it does not apply}, and the model's batch norm as the plan found it
    (None where it was not needed or cannot be known before the first run))."""
    small, found = kit.small(), None
    if settings.rules:
        found = command_batch_norm.find(small)
    rho = None if found is None else found.largest
    out, left_out = {}, {}
    for size in kit.sizes:
        large = kit.configs[(size, kit.seeds[0])]
        listed = [{"name": AS_IS, "recipe": {}, "clipped": []}]
        for name in settings.rules:
            why = rules.applies(name, large, found)
            if why is not None:
                left_out[name] = why
                continue
            ghost, _ = pairs.ghost_chunk(large, small)
            rule = rules.rule(name, small, large, ghost, rho)
            if size == kit.small_batch and not changes(rule.recipe, small, rho):
                continue  # the command itself at ratio 1: no candidate of its own
            if any(c["recipe"] == rule.recipe for c in listed):
                continue  # another rule's recipe here (linear and sqrt at ratio 1: the same warm-up)
            listed.append({"name": name, "recipe": rule.recipe, "clipped": rule.clipped})
        out[str(size)] = listed
    return out, left_out, found


def changes(recipe: dict[str, Any], command: RunConfig, rho: float | None) -> bool:
    """Whether a recipe trains otherwise than the command: a key whose value is not the one the command has in effect
    (an optimizer's own coefficient where the command leaves it unset; b's own batch-norm momentum; a ghost batch
    the size of the per-replica batch, which is the batch itself)."""
    train, model = command.train, command.model
    adam = train.optimizer in rules.ADAM_FAMILY
    in_effect = {"lr_factor": train.lr_factor, "warmup_epochs": train.warmup_epochs, "precise_bn": train.precise_bn,
                 "momentum": train.momentum if train.momentum is not None or not adam else
                 rules.ADAM_DEFAULTS["beta_1"],
                 "beta_2": train.beta_2 if train.beta_2 is not None else rules.ADAM_DEFAULTS["beta_2"],
                 "epsilon": train.epsilon if train.epsilon is not None else rules.ADAM_DEFAULTS["epsilon"],
                 "model.bn_momentum": model.bn_momentum if model.bn_momentum is not None else rho,
                 "model.ghost_batch_size": model.ghost_batch_size}
    for key, value in recipe.items():
        if key == "model.ghost_batch_size" and value == pairs.global_batch(command) // max(command.device.gpus, 1):
            continue
        if key not in in_effect or in_effect[key] is None or not math.isclose(float(value), float(in_effect[key]),
                                                                              rel_tol=1e-9):
            return True
    return False


def ramp_start(small: RunConfig, large: RunConfig, max_epochs: int) -> dict[str, Any]:
    """What the ramps need from the command: its training-set size (a proposal's phases in epochs), its warm-up (kept
    inside a proposal's first phase), the replicas a configured batch is of (per_replica_batch: a global batch over
    them), and the recipes of Smith's rule and Seesaw from b up to the largest batch size, their falls where a
    target run's own schedule (over `max_epochs`) falls, each planned as its runs will run (to the target, checked
    once an epoch), or why there is none (harness.config.smith, harness.config.seesaw)."""
    train = small.train
    size = datasets.expected_train_size(small.data, train.imbalance, train.train_fraction, train.tune_fraction)
    made = {}
    for rule in (smith, seesaw):
        recipe, why = (None, "a training set whose size is known before the first run") if size is None else \
            rule.recipe(small, size, cap=large.train.batch_size, epochs=max_epochs,
                        run_as={"target_tune_acc": 1.0, **COMMAND_SHAPE})
        made[rule.NAME] = {"recipe": recipe, "why_not": why}
    return {"train_size": size, "warmup_epochs": train.warmup_epochs,
            "replicas_per_batch": max(small.device.gpus, 1) if train.per_replica_batch else 1, **made}


def target_jobs(record: dict[str, Any], jobs: dict[tuple[int, int], list[str]], target: float,
                picked: list[tuple[int, str, dict[str, Any], list[int]]], prefix: str = "") -> list[tuple[list[str], str]]:
    """Target runs as (overrides, arm): each (size, name, recipe, seeds) at its point's job of every seed given,
    stopped at `target` or at the cap, the recipe's keys in place of the command's; `prefix` before each arm (a
    timed run's)."""
    stop = {"target_tune_acc": float(f"{target:.4g}"), "epochs": record["max_epochs"]}
    return [(with_recipe(jobs[(size, seed)], {**recipe, **stop}), prefix + arm(size, name))
            for size, name, recipe, seeds in picked for seed in seeds]


def plan(jobs: list[list[str]], run_configs: list[RunConfig], settings: Settings,
         given: dict[str, str]) -> tuple[list[list[str]], dict[str, Any]]:
    """(round 1's jobs, what sweep.json records of the choice) from the command's own jobs and configs."""
    kit = pairs.of_command(jobs, run_configs, "choose", "choice",
                           "e.g. batch_size=8,32,128,512: it times each one to the same target")
    _check_command(kit, settings, given)
    listed, left_out, found = candidates(kit, settings)
    b, seeds, epochs = kit.small_batch, kit.seeds, kit.small().train.epochs
    record = {"small_batch": b, "sizes": kit.sizes, "seeds": seeds, "epochs": epochs,
              "lr_factor": kit.small().train.lr_factor,
              "max_epochs": settings.cap(epochs), "target": settings.target, "candidates": listed,
              "rules_left_out": left_out, "batch_norm": None if found is None else found.as_json(),
              "settings": {**vars(settings), "rules": list(settings.rules), "lr_grid": list(settings.lr_grid)}}
    if settings.ramp:
        record.update(ramp_start(kit.small(), kit.large(), record["max_epochs"]))
    if settings.check:  # the check's seed: one that neither chose nor judged, fixed now so a resume plans the same
        record["check_seed"] = max(seeds) + 1
    points = {(size, seed): kit.job(size, seed) for size in kit.sizes for seed in seeds}
    record["points"] = {str(size): {str(seed): points[(size, seed)] for seed in seeds} for size in kit.sizes}
    if settings.target is None:  # the baseline: b as the command sets it, on every seed, E epochs
        planned = [(points[(b, seed)], BASELINE) for seed in seeds]
    else:
        planned = target_jobs(record, points, settings.target,
                              [(size, c["name"], c["recipe"], seeds[:1]) for size in kit.sizes
                               for c in listed[str(size)]])
    record["arms"] = {str(number): name for number, (_, name) in enumerate(planned)}
    return [job for job, _ in planned], {"choose": record, "more_rounds": True}

