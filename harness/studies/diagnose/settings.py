"""`diagnose.*`, validated at planning into Settings (one line naming `diagnose.<key>`, exit 2) and read back from
sweep.json into the same Settings by the reading."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from harness.fields import ConfigError, check_keys

# what a key an older sweep.json lacks meant: no warm-up before diagnose.warmup_epochs existed
BEFORE = {"warmup_epochs": 0.0}


@dataclass(frozen=True)
class Settings:
    """`diagnose.*`: how the arms are built, and the data checks' thresholds (not run config)."""

    lr_scaling: str = "sqrt"        # sqrt | linear: the learning rate of the lr arms, scaled from b
    warmup_epochs: float = 2.0      # with linear: a warm-up over this many of b's epochs
    attribution: str = "shapley"    # shapley: every subset of the arms, no order; ladder: the ordered arms
    tune_fraction: float = 0.1      # held out of the training split in every arm (capacity's tuning slice)
    label_shift: float = 0.15       # Cramér's V between split and class above which (with p < label_shift_p) ...
    label_shift_p: float = 0.01
    order: float = 0.5              # (f - e) / (1 - e) of consecutive same-class samples
    feature_shift: float = 0.25     # 2 AUC - 1 of a domain classifier
    capacity: float = 0.10          # b's train_eval_acc - tune_acc
    max_samples: int = 10_000       # per split, for the domain classifier
    check_data: bool = False        # set by the plan on its first job: this run checks the data

    def thresholds(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "check_data"}


_CHOICES = {"lr_scaling": ("sqrt", "linear"), "attribution": ("ladder", "shapley")}
_RANGES = {  # key -> (low, high, what is allowed)
    "warmup_epochs": (0.0, math.inf, "a number >= 0"), "tune_fraction": (0.0, 1.0, "a number in [0, 1)"),
    "label_shift": (0.0, 1.0, "a number in [0, 1)"), "label_shift_p": (0.0, 1.0, "a number in [0, 1)"),
    "order": (0.0, 1.0, "a number in [0, 1)"), "feature_shift": (0.0, 1.0, "a number in [0, 1)"),
    "capacity": (0.0, 1.0, "a number in [0, 1)"),
}


def settings_from_dict(node: dict[str, Any]) -> Settings:
    """The `diagnose` node of a composed config, validated; raises ConfigError naming `diagnose.<key>`."""
    check_keys(node, {f.name for f in dataclasses.fields(Settings)}, "diagnose.")
    for key, value in node.items():
        name = f"diagnose.{key}"
        if key in _CHOICES and value not in _CHOICES[key]:
            raise ConfigError(name, value, f"one of {', '.join(_CHOICES[key])}")
        if key in _RANGES:
            low, high, allowed = _RANGES[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value < high:
                raise ConfigError(name, value, allowed)
        if key == "max_samples" and (isinstance(value, bool) or not isinstance(value, int) or value < 100):
            raise ConfigError(name, value, "an integer >= 100")
        if key == "check_data" and not isinstance(value, bool):
            raise ConfigError(name, value, "true or false")
    return Settings(**node)


def recorded(record: dict[str, Any]) -> Settings:
    """The settings sweep.json's diagnosis plan (`record`, its `diagnose`) holds, in their dataclass: a key it does
    not record takes its meaning from before that key existed (BEFORE), else the default."""
    known = Settings.__dataclass_fields__
    return Settings(**{**BEFORE, **{key: value for key, value in record.get("settings", {}).items() if key in known}})
