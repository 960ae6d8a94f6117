"""+study=recover's guided round: `recover.guided` recipes at B proposed by Optuna's TPE sampler (Bergstra et al.
2011), seeded from `recover.seed`, told every finished trial of round 1 (the Sobol points and the rules) whose
recipe lies in `recover.space`, and asked over the same space. The only module that imports Optuna.

The space's keys are the study's parameters in the search's own coordinates (the Sobol points' mapping,
harness.studies.recover.plan.recipe):

    lr_factor          log over [low, high x B/b]
    warmup_epochs      over [low, high] x E
    one_minus_momentum log over [low, high]            the recipe's momentum is 1 - it
    lr_wd_steps        log over [low, high]            weight_decay = it / (peak lr per lr_factor x lr_factor x steps)
    label_smoothing                                    as it is
    one_minus_bn_momentum log over [1 - high, 1 - low]  high null: rho_b, b's momentum (the plan's batch_norm)
    lr_schedule, optimizer, ghost_batch_size           the space's choices (ghost "b": b's chunk)

A trial is told with its tune_acc (a diverged one with 0, the worst there is; a failed one not at all), a trial
cut at a rung as pruned with its tune_acc there (TPE ranks it below every complete one); a rule
whose recipe leaves a key of the space to the command (a null weight decay, the optimizer's own momentum) is not a
point of the space and is not told, though it is ranked as every trial is. Deterministic: the same told trials in
the same order and the same seed propose the same recipes, so a resumed command plans the same round. The study is
rebuilt from the runs' files each time, and written to the sweep folder (STUDY_FILE, Optuna's journal) for
`optuna-dashboard`: a copy, never the only one (sweep.json's jobs hold every recipe).
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

from harness.studies.recover import settings
from harness.studies.recover.space import CHOICES, LOG, OVERRIDE

STUDY_FILE = "recover-optuna.log"  # in the sweep folder: optuna-dashboard recover-optuna.log
STUDY_NAME = "recover"
PARAM = {"momentum": "one_minus_momentum", "weight_decay": "lr_wd_steps",
         "bn_momentum": "one_minus_bn_momentum"}  # a space key -> its parameter's name
COMPLEMENT = ("momentum", "bn_momentum")  # drawn as 1 - the value
ROUNDING = 1e-3  # a recipe's value is written to 4 significant digits: that far past an end is still inside


def _optuna():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _bounds(name: str, values: list, record: dict[str, Any]) -> tuple[float, float]:
    if name == "bn_momentum":  # as the plan draws it (harness.studies.recover.plan.recipe)
        high = float(record["batch_norm"]["rho"] if values[1] is None else values[1])
        return 1.0 - high, 1.0 - min(float(values[0]), high)
    low, high = float(values[0]), float(values[1])
    if name == "lr_factor":
        high *= record["large_batch"] / record["small_batch"]
    elif name == "warmup_epochs":
        low, high = low * record["epochs"], high * record["epochs"]
    return low, high


def distributions(record: dict[str, Any]) -> dict[str, Any]:
    """The study's parameters: one per key of the recovery plan's space (`record`, sweep.json's recover)."""
    dist = _optuna().distributions
    found = {}
    for name, values in record["space"].items():
        if name in CHOICES:
            found[PARAM.get(name, name)] = dist.CategoricalDistribution(list(values))
        else:
            low, high = _bounds(name, values, record)
            found[PARAM.get(name, name)] = dist.FloatDistribution(low, high, log=name in LOG or
                                                                  name == "bn_momentum")
    return found


def params_of(recipe: dict[str, Any], record: dict[str, Any]) -> dict[str, Any] | None:
    """A trial's recipe as the study's parameters, or None where it is not a point of the space."""
    params = {}
    for name, values in record["space"].items():
        value = recipe.get(OVERRIDE.get(name, name))
        if name == "ghost_batch_size":
            value = "b" if value is not None and value == record.get("ghost") else value
        if name in CHOICES:
            if value not in values:
                return None
            params[name] = value
            continue
        if value is None:
            return None
        if name in COMPLEMENT:
            value = 1.0 - value
        elif name == "weight_decay":
            value = value * record["decay_unit"] * recipe.get("lr_factor", _command_lr_factor(record))
        low, high = _bounds(name, values, record)
        if not low * (1 - ROUNDING) <= value <= high * (1 + ROUNDING):
            return None
        params[PARAM.get(name, name)] = min(max(value, low), high)
    return params


def _command_lr_factor(record: dict[str, Any]) -> float:
    """The lr_factor a recipe without one trains at: the command's at B, as the plan draws the Sobol points'
    weight decay at it (an older record without it: 1)."""
    return float(record.get("lr_factor", 1.0))


def recipe_of(params: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The study's parameters as a recipe keyed as overrides, written as the Sobol points' are."""
    found = {}
    for name in record["space"]:
        key, value = OVERRIDE.get(name, name), params[PARAM.get(name, name)]
        if name == "ghost_batch_size":
            found[key] = record.get("ghost") if value == "b" else None
            continue
        if name in CHOICES:
            found[key] = value
            continue
        if name in COMPLEMENT:
            value = 1.0 - value
        elif name == "weight_decay":
            value /= record["decay_unit"] * found.get("lr_factor", _command_lr_factor(record))
        found[key] = float(f"{value:.4g}")
    return found


Cut = tuple[int, dict[str, Any], str, int, float]  # a trial cut at a rung: (trial, recipe, source, epoch, tune_acc)


def _study(record: dict[str, Any], told: list[tuple[int, dict[str, Any], str, float | None]], storage=None,
           cut: list[Cut] = ()):
    """The study, told the trials `told` ((trial, recipe, source, tune_acc): tune_acc None for a diverged one) and
    those `cut` at a rung (pruned) that lie in the space, in trial order."""
    optuna = _optuna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(seed=settings.recorded(record).seed, n_startup_trials=0,
                                             multivariate=True, constant_liar=True)
    study = optuna.create_study(study_name=STUDY_NAME, storage=storage, sampler=sampler, direction="maximize")
    dists = distributions(record)
    told = [(number, recipe, source, {"value": 0.0 if tune is None or not math.isfinite(tune) else float(tune)})
            for number, recipe, source, tune in told]
    pruned = [(number, recipe, source, {"state": optuna.trial.TrialState.PRUNED, "intermediate_values": {epoch: tune}})
              for number, recipe, source, epoch, tune in cut]
    for number, recipe, source, outcome in sorted([*told, *pruned], key=lambda t: t[0]):
        params = params_of(recipe, record)
        if params is None:
            continue
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, **outcome,
                                                  user_attrs={"trial": number, "source": source}))
    return study, dists


def told_count(record: dict[str, Any], told: list[tuple[int, dict[str, Any], str, float | None]]) -> int:
    """How many of `told` lie in the space (what the sampler learns from)."""
    return sum(params_of(recipe, record) is not None for _, recipe, _, _ in told)


def propose(record: dict[str, Any], told: list[tuple[int, dict[str, Any], str, float | None]],
            count: int, cut: list[Cut] = ()) -> list[dict[str, Any]]:
    """`count` recipes the sampler proposes after being told `told` and `cut`: the guided round's, in order."""
    study, dists = _study(record, told, cut=cut)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [recipe_of(study.ask(dists).params, record) for _ in range(count)]


def write(sweep_dir: Path, record: dict[str, Any], told: list[tuple[int, dict[str, Any], str, float | None]],
          cut: list[Cut] = ()) -> None:
    """The search's trials that lie in the space, finished, as an Optuna study in the sweep folder (rewritten whole:
    a copy of what the runs' files say)."""
    optuna = _optuna()
    path = Path(sweep_dir) / STUDY_FILE
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(partial)))
    _study(record, told, storage, cut)
    partial.replace(path)
