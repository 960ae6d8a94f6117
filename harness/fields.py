"""Typed values read out of a plain config dict; every error is one line naming the key, the value and what is
allowed (`ConfigError`), which the command line prints as it is, with exit code 2."""
from __future__ import annotations

import math
from typing import Any


class ConfigError(ValueError):
    """A bad key or value; the message is the one line shown to the user."""

    def __init__(self, key: str, value: Any, allowed: str):
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={value!r} is not allowed: {allowed}")


def check_keys(section: dict, allowed: set[str], prefix: str) -> None:
    for key in section:
        if key not in allowed:
            shown = ", ".join(sorted(f"{prefix}{k}" for k in allowed))
            raise ConfigError(f"{prefix}{key}", section[key], f"unknown key; valid keys are {shown}")


def int_value(cfg: dict, key: str, low: int | None = None, name: str | None = None) -> int:
    name = name or key
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, value, "an integer" + (f" >= {low}" if low is not None else ""))
    if low is not None and value < low:
        raise ConfigError(name, value, f"an integer >= {low}")
    return value


def float_value(cfg: dict, key: str, name: str | None = None) -> float:
    name = name or key
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(name, value, "a finite number")
    return float(value)


def bool_value(cfg: dict, key: str, name: str | None = None) -> bool:
    value = cfg[key]
    if not isinstance(value, bool):
        raise ConfigError(name or key, value, "true or false")
    return value


def choice(cfg: dict, key: str, allowed: tuple[str, ...]) -> str:
    if cfg[key] not in allowed:
        raise ConfigError(key, cfg[key], f"one of {', '.join(allowed)}")
    return cfg[key]


class RegistryEntry:
    """Mixin of a frozen config dataclass with `name` and `source` fields: `source` names the registry entry
    that loads or builds it, and defaults to `name` (they differ for dataset=tfds and model=application)."""

    name: str
    source: str | None

    def __post_init__(self):
        if self.source is None:
            object.__setattr__(self, "source", self.name)

    def flat_name(self, group: str) -> dict[str, Any]:
        """`group` (and `group.source` where it is not the name), by their command-line keys."""
        return {group: self.name, **({f"{group}.source": self.source} if self.source != self.name else {})}
