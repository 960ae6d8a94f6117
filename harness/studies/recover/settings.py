"""+study=recover's settings (`recover.*`: not run config): validated from the composed config at planning
(`from_dict`), recorded in sweep.json's `recover.settings`, and read back from there into the same dataclass
(`recorded`) by the later rounds and the reading, with a key an older sweep.json does not record meaning the
behaviour before that key existed. Plain data and checks: imported by the plan, the rounds and the reading alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.fields import ConfigError, check_keys
from harness.studies.recover.space import CHOICES, LOG, RANGES

RULES = ("linear", "sqrt", "adam_sde", "precise_bn", "ramp", "smith", "seesaw")  # the published rules (harness.config.rules)
# what a key an older sweep.json lacks meant: no guided round, no rules and no judging seeds before they existed
# (the verdict then paired the seeds that chose the recipe)
BEFORE = {"guided": 0, "rules": (), "judge": 0, "probes": True, "rungs": ()}  # and the probes in every run, and
# every trial run whole


@dataclass(frozen=True)
class Settings:
    """`recover.*`: the search's size, seed and space, and what later rounds will read (not run config)."""

    trials: int = 16
    seed: int = 0
    confirm: int = 3
    tolerance: float = 0.01
    budget: bool = True
    tune_small: bool = False
    tune_fraction: float = 0.1
    rules: tuple[str, ...] = RULES
    guided: int = 8
    judge: int = 3    # fresh seeds, after the command's, on which the chosen recipe is judged (0: the choosing seeds)
    probes: bool = False  # the probes in the trials' runs too (the report's Why reads b and B as they are only)
    rungs: tuple[float, ...] = (0.5,)  # fractions of the epochs where the Sobol trials are compared on tune_acc,
    # the better `keep` of them continuing from their checkpoint (successive halving); () runs every trial whole
    keep: float = 0.5
    space: dict[str, list] = field(default_factory=dict)


def from_dict(node: dict[str, Any]) -> Settings:
    """The `recover` node of a composed config, validated; raises ConfigError naming `recover.<key>`."""
    check_keys(node, set(Settings.__dataclass_fields__), "recover.")
    trials = node.get("trials", 16)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 2 or trials & (trials - 1):
        raise ConfigError("recover.trials", trials, "a power of two >= 2 (as Sobol points want): 8, 16, 32, ...")
    if not isinstance(node.get("probes", False), bool):
        raise ConfigError("recover.probes", node["probes"], "true or false (the probes in the trials' runs too: the "
                          "report's Why reads b and B as they are only)")
    for key in ("seed", "confirm", "guided", "judge"):
        value = node.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key == "confirm" else 0):
            raise ConfigError(f"recover.{key}", value, "an integer >= 1" if key == "confirm" else "an integer >= 0")
    fraction = node.get("tune_fraction", 0.1)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise ConfigError("recover.tune_fraction", fraction, "a number in (0, 1): every run holds out the tuning "
                          "slice the search is chosen on")
    named = node.get("rules", list(RULES))
    if not isinstance(named, (list, tuple)) or any(name not in RULES for name in named) \
            or len(set(named)) != len(named):
        raise ConfigError("recover.rules", named, f"a list of distinct rules among {', '.join(RULES)} (the "
                          "published rules run as candidates of round 1; [] for none)")
    rungs = node.get("rungs", [0.5])
    if not isinstance(rungs, (list, tuple)) or any(isinstance(f, bool) or not isinstance(f, (int, float))
                                                   or not 0 < f < 1 for f in rungs) or list(rungs) != sorted(set(rungs)):
        raise ConfigError("recover.rungs", rungs, "increasing fractions in (0, 1) of the epochs, where the search's "
                          "trials are compared and the better part continues ([] to run every trial whole)")
    keep = node.get("keep", 0.5)
    if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not 0 < keep < 1:
        raise ConfigError("recover.keep", keep, "a number in (0, 1): the share of the trials at a rung that continue")
    space = node.get("space") or {}
    for key, values in space.items():
        name = f"recover.space.{key}"
        if key not in CHOICES + RANGES:
            raise ConfigError(name, values, f"a key of the space: {', '.join(CHOICES + RANGES)}")
        if not isinstance(values, list) or not values:
            raise ConfigError(name, values, "a list: [low, high] for a range, the options for a choice")
        if key == "bn_momentum":
            check_bn_range(values)
        elif key in RANGES:
            if len(values) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values) \
                    or not values[0] <= values[1] or (key in LOG and values[0] <= 0):
                raise ConfigError(name, values, "[low, high] with low <= high" + (", low > 0 (log-uniform)"
                                                                                  if key in LOG else ""))
    return Settings(**{**node, "rules": tuple(named), "rungs": tuple(rungs), "space": dict(space)})


def check_bn_range(values: list) -> None:
    """recover.space.bn_momentum: [low, high] within (0, 1), high null for rho_b; raises ConfigError."""
    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1

    if len(values) != 2 or not number(values[0]) or not (values[1] is None or number(values[1]) and
                                                           values[0] <= values[1]):
        raise ConfigError("recover.space.bn_momentum", values, "[low, high] within (0, 1), low <= high, high null "
                          "for b's own momentum (the command's model.bn_momentum or the layers' largest)")


def recorded(record: dict[str, Any]) -> Settings:
    """The settings sweep.json's recovery plan (`record`, its `recover`) holds, in their dataclass: a key it does
    not record takes its meaning from before that key existed (BEFORE), else the default; the space is the plan's."""
    saved = record.get("settings", {})
    known = Settings.__dataclass_fields__
    values = {**BEFORE, **{key: value for key, value in saved.items() if key in known and key != "space"}}
    return Settings(**{**values, "rules": tuple(values["rules"]), "rungs": tuple(values["rungs"]),
                       "space": dict(record.get("space", {}))})


def rung_epochs(rungs: tuple[float, ...], epochs: int) -> list[int]:
    """The epochs the rungs fall on (each fraction of `epochs`, at least 1), those before `epochs` only: none
    where a run is one epoch long."""
    return sorted({max(1, int(fraction * epochs)) for fraction in rungs} - set(range(epochs, epochs + 1)))


def judging_seeds(record: dict[str, Any]) -> list[int]:
    """The fresh seeds the chosen recipe is judged on: recover.judge of them after the command's highest, so that
    no seed that chose the recipe (the search's, the confirmation's) judges it ([]: an older sweep, judged on
    those)."""
    top = max(record["seeds"])
    return list(range(top + 1, top + 1 + recorded(record).judge))
