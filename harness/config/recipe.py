"""The training recipe's keys (docs/configuration.md#the-training-recipe): the optimizers by name, each class's
keyword for the first and second moment and epsilon, the schedules, the keys' defaults (at which a run's identity
leaves them out), and their validation against the optimizer. No backend: harness.run.train builds the optimizer."""
from __future__ import annotations

from typing import Any

from harness.fields import ConfigError, bool_value, choice, float_value

# name -> (keras.optimizers class, its keyword arguments besides the learning rate)
OPTIMIZERS: dict[str, tuple[str, dict[str, Any]]] = {
    "adam": ("Adam", {}),
    "adamw": ("AdamW", {}),
    "lamb": ("Lamb", {}),
    "lion": ("Lion", {}),
    "muon": ("Muon", {}),
    "nadam": ("Nadam", {}),
    "sgd": ("SGD", {}),
    "momentum": ("SGD", {"momentum": 0.9}),
    "rmsprop": ("RMSprop", {}),
}
# `momentum` is each class's first-moment coefficient under its own keyword (docs/configuration.md's table)
MOMENTUM_KEYWORD = {"SGD": "momentum", "RMSprop": "momentum", "Muon": "momentum", "Adam": "beta_1",
                    "AdamW": "beta_1", "Nadam": "beta_1", "Lamb": "beta_1", "Lion": "beta_1"}
# `beta_2`, the second moment's coefficient, and `epsilon`, the denominator's floor, under each class's keyword;
# a class missing from a table has no such term (SGD neither; Lion no epsilon)
BETA_2_KEYWORD = {"Adam": "beta_2", "AdamW": "beta_2", "Nadam": "beta_2", "Lamb": "beta_2", "Lion": "beta_2",
                  "Muon": "adam_beta_2", "RMSprop": "rho"}
EPSILON_KEYWORD = {"Adam": "epsilon", "AdamW": "epsilon", "Nadam": "epsilon", "Lamb": "epsilon", "Muon": "epsilon",
                   "RMSprop": "epsilon"}
NESTEROV = ("sgd", "momentum")  # the optimizers `nesterov` applies to
LR_SCHEDULES = ("constant", "cosine", "linear", "step")
# The recipe's keys at their defaults: left out of a run's identity (run.json's config, the fingerprint sweep.json
# keeps, what a resume compares), so that a sweep made before these keys existed resumes as it was.
RECIPE_DEFAULTS: dict[str, Any] = {"momentum": None, "nesterov": False, "weight_decay": None,
                                   "lr_schedule": "constant", "label_smoothing": 0.0, "beta_2": None, "epsilon": None,
                                   "precise_bn": None}


def from_dict(cfg: dict, optimizer: str) -> dict[str, Any]:
    """The recipe's keys of a composed config (momentum, nesterov, weight_decay, lr_schedule, label_smoothing, beta_2,
    epsilon, precise_bn), validated against the optimizer; raises ConfigError."""
    momentum, decay = cfg["momentum"], cfg["weight_decay"]
    if momentum is not None and not 0.0 <= float_value(cfg, "momentum") < 1.0:
        raise ConfigError("momentum", momentum, "null (the optimizer's own) or a number in [0, 1)")
    if momentum is not None and float(momentum) == 0.0 and optimizer == "lion":
        raise ConfigError("momentum", momentum, "a number in (0, 1) with optimizer=lion (its beta_1 must be > 0)")
    nesterov = bool_value(cfg, "nesterov")
    if nesterov and optimizer not in NESTEROV:
        raise ConfigError("nesterov", nesterov, f"false unless optimizer is {' or '.join(NESTEROV)} (optimizer="
                          f"{optimizer})")
    if nesterov and optimizer == "sgd" and not momentum:
        raise ConfigError("nesterov", nesterov, "false without momentum: optimizer=momentum, or momentum > 0 with "
                          "optimizer=sgd")
    if decay is not None and float_value(cfg, "weight_decay") < 0:
        raise ConfigError("weight_decay", decay, "null (the optimizer's own) or a number >= 0")
    smoothing = float_value(cfg, "label_smoothing")
    if not 0.0 <= smoothing < 1.0:
        raise ConfigError("label_smoothing", cfg["label_smoothing"], "a number in [0, 1)")
    return {"momentum": None if momentum is None else float(momentum), "nesterov": nesterov,
            "weight_decay": None if decay is None else float(decay),
            "lr_schedule": choice(cfg, "lr_schedule", LR_SCHEDULES), "label_smoothing": smoothing,
            **_second_moment(cfg, optimizer), "precise_bn": _precise_bn(cfg.get("precise_bn"))}


def _precise_bn(value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError("precise_bn", value, "null (off) or a number of training samples >= 1 on which every "
                          "batch-norm layer's statistics are recomputed before each evaluation")
    return value


def _second_moment(cfg: dict, optimizer: str) -> dict[str, float | None]:
    """beta_2 in [0, 1) and epsilon > 0, each null (the optimizer's own) or refused where the optimizer has none."""
    class_name = OPTIMIZERS[optimizer][0]
    found = {}
    for key, keywords, allowed, valid in (("beta_2", BETA_2_KEYWORD, "a number in [0, 1)", lambda v: 0 <= v < 1),
                                         ("epsilon", EPSILON_KEYWORD, "a number > 0", lambda v: v > 0)):
        value = cfg.get(key)
        if value is None:
            found[key] = None
            continue
        if class_name not in keywords:
            takes = ", ".join(name for name, (cls, _) in OPTIMIZERS.items() if cls in keywords)
            raise ConfigError(key, value, f"null with optimizer={optimizer}, which has none ({takes} take one)")
        if not valid(float_value(cfg, key)):
            raise ConfigError(key, value, f"null (the optimizer's own) or {allowed}")
        found[key] = float(value)
    return found
