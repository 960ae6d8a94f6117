"""+study=recover's plan: round 1 (the reference and the search) from the user's own command, and the jobs of the
later rounds (the confirmation, the budget) from what the rounds before found (harness.launch.rounds decides which).

`python -m harness +study=recover batch_size=b,B [the user's data, model, epochs, optimizer, lr...] -m` runs, with b
the smallest global batch and B the largest, at the user's epochs E, every run holding out the same tuning slice:

- the reference: every seed's runs as they are (`as_is`) at b and at B (and any batch size between);
- the search: `recover.trials` recipes at B within E epochs, on the command's first seed, at the points of a seeded
  scrambled Sobol sequence (scipy.stats.qmc.Sobol, `recover.seed`) over `recover.space`.

The space's keys and their defaults (conf/study/recover.yaml), each a key of the training recipe
(docs/configuration.md): `lr_factor` log-uniform over [low, high x B/b] around the user's lr; `lr_schedule`,
`optimizer` (null: the user's own) and `model.ghost_batch_size` (null: none; b: b's chunk) choices; `warmup_epochs`
uniform over [low, high] x E; `momentum` as 1 - momentum, log-uniform; `weight_decay` log-uniform over lr x wd x
steps; `label_smoothing` uniform; `model.bn_momentum` as 1 - momentum, log-uniform over [low, high], high null
standing for b's momentum rho_b. `model.bn_momentum` applies to any model with batch norm (found before the first
run: harness.models.batch_norm), which the rules then scale by the EMA rule too (harness.config.rules); ghost batch norm to a
built-in model with batch norm that is not synchronized; weight_decay to a training set whose size is known before
its first run.
Pure: the plan's jobs and RunConfigs in, the new jobs and what sweep.json records out (no Hydra, no backend).
"""
from __future__ import annotations

import math
from typing import Any

from harness.config import batching, pairs, rules
from harness.config.overrides import with_recipe
from harness.config.pairs import global_batch
from harness.config.schema import RunConfig
from harness.data import registry as datasets
from harness.fields import ConfigError
from harness.studies.recover import batch_norm
from harness.studies.recover.settings import Settings, judging_seeds, recorded, rung_epochs
from harness.studies.recover.space import CHOICES, LOG, OVERRIDE

AS_IS = "as_is"
SOBOL, RULE = "sobol", "rule"  # a trial's source (sweep.json's recover.sources; before the rules, every trial Sobol's)
SMALL = "small_"  # the arm of a trial at b (recover.tune_small): small_trial_<k>
QUIET = {"probes": False}  # what a trial's run sets beside its recipe unless recover.probes: no probes (the report's
# Why reads b and B as they are only, which keep the command's)
INPUTS = ("optimizer", "bn_momentum", "precise_bn")  # keys of the space the command may give: what null stands
# for (a choice's null, bn_momentum's high end)


def _decay_unit(large: RunConfig) -> float | None:
    """The large batch's peak learning rate per unit of lr_factor (its lr, scaled by its lr_scaling) times its
    planned steps (its budget), or None where the training set's size is known only once loaded."""
    train = large.train
    size = datasets.expected_train_size(large.data, train.imbalance, train.train_fraction, train.tune_fraction)
    if size is None:
        return None
    plan = batching.plan_batches(train.batch_size, train.per_replica_batch, max(large.device.gpus, 1), size,
                                 train.steps_per_execution, backend=large.device.backend,
                                 host_devices=large.device.jax_host_devices)
    schedule = batching.plan_schedule(plan, train)
    return schedule.peak_lr / train.lr_factor * schedule.planned_steps


def _check_command(given: dict[str, str], space: dict[str, list]) -> None:
    """A key the search sets (and the command's own value cannot be its choice) is refused, naming recover.space."""
    for name in space:
        key = OVERRIDE.get(name, name)
        if key in given and name not in INPUTS:
            raise ConfigError(key, given[key].split("=", 1)[1], "left to +study=recover, whose search sets it: "
                              f"narrow recover.space.{name} instead (e.g. recover.space.{name}=[...])")


def points(settings: Settings, dimensions: int):
    """The search's Sobol points in [0, 1)^dimensions: reproducible from recover.seed."""
    from scipy.stats import qmc

    return qmc.Sobol(dimensions, scramble=True, seed=settings.seed).random(settings.trials)


def recipe(point, space: dict[str, list], small: RunConfig, large: RunConfig, decay_unit: float | None,
           ghost: int | None, rho: float | None = None) -> dict[str, Any]:
    """One trial's recipe, keyed as overrides: each key of the space at its coordinate of the Sobol point (keys in
    `space`'s order); `decay_unit` is the run's peak learning rate per unit of lr_factor times its planned steps;
    `rho` b's batch-norm momentum, bn_momentum's high end where the space leaves it null."""
    ratio, epochs, found = global_batch(large) / global_batch(small), large.train.epochs, {}
    for u, (name, values) in zip(point, space.items()):
        key = OVERRIDE.get(name, name)
        if name in CHOICES:
            choice = values[min(int(u * len(values)), len(values) - 1)]
            if name == "ghost_batch_size":
                choice = ghost if choice == "b" else None
            found[key] = choice
            continue
        if name == "bn_momentum":  # 1 - momentum log-uniform: as many draws near rho_b as near the floor
            high = float(rho if values[1] is None else values[1])
            low = min(float(values[0]), high)
            found[key] = float(f"{1.0 - (1.0 - high) * ((1.0 - low) / (1.0 - high)) ** u:.4g}")
            continue
        low, high = float(values[0]), float(values[1])
        if key == "lr_factor":
            high *= ratio
        if key in LOG:
            value = low * (high / low) ** u
        else:
            value = low + u * (high - low)
        if key == "warmup_epochs":
            value *= epochs
        elif key == "momentum":
            value = 1.0 - value
        elif key == "weight_decay":  # lr x wd x steps over the range, at the trial's own peak learning rate
            value /= decay_unit * found.get("lr_factor", large.train.lr_factor)
        found[key] = float(f"{value:.4g}")
    return found


def quiet(record: dict[str, Any]) -> dict[str, Any]:
    """What a trial's run of a later round sets beside its recipe: QUIET unless recover.probes (an older sweep's
    trials kept their probes)."""
    return {} if recorded(record).probes else dict(QUIET)


def confirm_jobs(record: dict[str, Any], jobs: dict[str, list[str]], numbers: list[int],
                 recipes: list[dict[str, Any]], small: bool = False) -> list[tuple[list[str], str]]:
    """The confirmation, as (overrides, arm): the trials `numbers` (the reading's to_confirm; `recipes`, every
    trial's) at every seed of the command but the first (where each already ran), each at B's own job of that seed
    with its recipe, so that it pairs with b's run of the seed; `small`: b's trials (recover.tune_small), at b's."""
    size, prefix = ("b", SMALL) if small else ("B", "")
    return [(with_recipe(jobs[record["reference"][size][str(seed)]], {**recipes[number], **quiet(record)}),
             f"{prefix}trial_{number}")
            for number in numbers for seed in record["seeds"][1:]]


def guided_jobs(record: dict[str, Any], jobs: dict[str, list[str]],
                recipes: list[dict[str, Any]]) -> list[tuple[list[str], str]]:
    """The guided round, as (overrides, arm): each proposed recipe at B's own job of the search's seed, numbered
    after round 1's trials."""
    first, base = len(record["trials"]), jobs[record["reference"]["B"][str(record["seeds"][0])]]
    return [(with_recipe(base, {**found, **quiet(record)}), f"trial_{first + i}") for i, found in enumerate(recipes)]


def judge_jobs(record: dict[str, Any], jobs: dict[str, list[str]], trial: int, recipe: dict[str, Any],
               small: tuple[int, dict[str, Any]] | None = None,
               seeds: list[int] | None = None) -> list[tuple[list[str], str]]:
    """The judging round, as (overrides, arm): on each judging seed (or on `seeds`: those added later), b as it is
    (or with its own recipe `small`, recover.tune_small), B as it is and the recipe (trial `trial`) at B: the
    verdict's pairs, on seeds that chose nothing."""
    first = str(record["seeds"][0])
    at_b, at_big = jobs[record["reference"]["b"][first]], jobs[record["reference"]["B"][first]]
    small_side = (AS_IS, {}) if small is None else (f"{SMALL}trial_{small[0]}", {**small[1], **quiet(record)})
    return [job for seed in (judging_seeds(record) if seeds is None else seeds) for job in (
        (with_recipe(at_b, {**small_side[1], "seed": seed}), small_side[0]),
        (with_recipe(at_big, {"seed": seed}), AS_IS),
        (with_recipe(at_big, {**recipe, **quiet(record), "seed": seed}), f"trial_{trial}"))]


def rung_jobs(record: dict[str, Any], jobs: dict[str, list[str]], continuing: list[tuple[int, str]],
              rung: int) -> list[tuple[list[str], str, str]]:
    """Rung `rung`'s round (1: after the first rung), as (overrides, arm, job continued): each trial of `continuing`
    ((trial, its paused job)) continued from its paused run to the next rung, or to its epochs after the last."""
    rungs = record["rungs"]
    following = {"pause_epoch": rungs[rung]} if rung < len(rungs) else {}
    return [([o for o in jobs[job] if not o.startswith("pause_epoch=")] + [f"{k}={v}" for k, v in following.items()],
             f"trial_{trial}", job) for trial, job in continuing]


def budget_lengths(record: dict[str, Any]) -> list[int]:
    """The budget round's lengths in epochs: 2E, 4E, ... up to (B/b)E, the last of them (B/b)E itself."""
    epochs, ratio = record["epochs"], record["large_batch"] / record["small_batch"]
    lengths, factor = [], 2
    while factor < ratio:
        lengths.append(factor * epochs)
        factor *= 2
    lengths.append(math.ceil(ratio * epochs))
    return sorted({length for length in lengths if length > epochs})  # a ratio below 2: (B/b)E alone, if above E


def budget_jobs(record: dict[str, Any], jobs: dict[str, list[str]], recipe: dict[str, Any],
                epochs: int, rule: tuple[int, dict[str, Any]] | None = None) -> list[tuple[list[str], str]]:
    """One length of the budget round, as (overrides, arm): `recipe` at `epochs` on every seed (its schedule spread
    over the run's own length: the schedules are planned from the run's epochs), arm budget_<epochs>; and beside
    it `rule` (its trial number and recipe: the best confirmed rule, where the recipe is not a rule), arm
    budget_<epochs>_trial_<k>: a longer run may favour another recipe than E epochs did."""
    found = [(recipe, f"budget_{epochs}")] + ([] if rule is None else [(rule[1], f"budget_{epochs}_trial_{rule[0]}")])
    return [(with_recipe(jobs[record["reference"]["B"][str(seed)]], {**each, **quiet(record), "epochs": epochs}), arm)
            for each, arm in found for seed in record["seeds"]]


def plan(jobs: list[list[str]], run_configs: list[RunConfig], settings: Settings,
         given: dict[str, str]) -> tuple[list[list[str]], dict[str, Any]]:
    """(round 1's jobs, what sweep.json records of the recovery) from the command's own jobs and configs."""
    space = dict(settings.space)
    kit = pairs.of_command(jobs, run_configs, "recover", "recovery",
                           "e.g. batch_size=8,128: it searches a recipe for the largest")
    b, big, seeds = kit.small_batch, kit.large_batch, kit.seeds
    small, large = kit.small(), kit.large()
    norms = batch_norm.of_command(small, large, space, bool(settings.rules))
    ghost, rho, left_out = norms.ghost, norms.rho, dict(norms.left_out)
    decay_unit = _decay_unit(large)
    if decay_unit is None and "weight_decay" in space:
        left_out["weight_decay"] = "a training set whose size is known before its first run"
    space = {key: values for key, values in space.items() if key not in left_out}
    _check_command(given, space)
    if "pause_epoch" in given:
        raise ConfigError("pause_epoch", given["pause_epoch"].split("=", 1)[1], "null with +study=recover, whose rungs "
                          "pause its trials (recover.rungs)")
    if not space:
        raise ConfigError("recover.space", settings.space, "at least one key this command can search")
    planned, arms, reference = [], [], {"b": {}, "B": {}}
    for seed in seeds:
        for size in kit.as_is_order:
            if size in (b, big):
                reference["b" if size == b else "B"][str(seed)] = str(len(planned))
            planned.append(kit.job(size, seed))
            arms.append(AS_IS)
    drawn = points(settings, len(space))
    trials = [recipe(point, space, small, large, decay_unit, ghost, rho) for point in drawn]
    sources, rules_left_out = [{"source": SOBOL} for _ in trials], {}
    for name in settings.rules:  # after the Sobol points: trial k is the k-th Sobol point, as before the rules
        why = rules.applies(name, large, norms.found, small)
        if why is not None:
            rules_left_out[name] = why
            continue
        found = rules.rule(name, small, large, ghost, rho)
        trials.append(found.recipe)
        sources.append({"source": RULE, "rule": name, **({"clipped": found.clipped} if found.clipped else {})})
    silent = {} if settings.probes else QUIET
    rungs = rung_epochs(settings.rungs, large.train.epochs) if large.train.budget == "epochs" else []
    for number, found in enumerate(trials):  # a Sobol point pauses at the first rung (a rule runs whole)
        paused = {"pause_epoch": rungs[0], **({} if "pause_when" in given else {"pause_when": "cheaper"})} \
            if rungs and sources[number]["source"] == SOBOL else {}  # the command's pause_when=always: every trial
        planned.append(with_recipe(kit.job(big, seeds[0]), {**found, **silent, **paused}))
        arms.append(f"trial_{number}")
    record = {"small_batch": b, "large_batch": big, "seeds": seeds, "epochs": large.train.epochs,
              "arms": {}, "reference": reference, "space": space, "left_out": left_out, "trials": trials,
              "sources": sources, "rules_left_out": rules_left_out,
              "decay_unit": decay_unit, "ghost": ghost, "lr_factor": large.train.lr_factor, "rungs": rungs,
              "batch_norm": norms.record(large),
              "settings": {k: v for k, v in vars(settings).items() if k != "space"}}
    if settings.tune_small:  # b gets the same search, at its own lr range and steps: the fair baseline
        small_decay = _decay_unit(small) if "weight_decay" in space else None
        record["small_trials"] = [recipe(point, space, small, small, small_decay, ghost, rho) for point in drawn]
        for number, found in enumerate(record["small_trials"]):
            planned.append(with_recipe(kit.job(b, seeds[0]), {**found, **silent}))
            arms.append(f"{SMALL}trial_{number}")
    record["arms"] = {str(num): arm for num, arm in enumerate(arms)}
    return planned, {"recover": record, "more_rounds": True}
