"""A run a study proposes, planned as a user's command is before the study runs it (harness.config.schema.from_dict
plans every command's phases the same way): its batch schedule parsed against its epochs, each phase's batches
planned on its devices (harness.config.ramp.plan_run) and checked against the model (schema.check_phases). A study
that keeps what this refuses out of its rounds never composes a run that cannot start. Pure: a config and the
proposal's training keys in, the one-line error or None out.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from harness.config import ramp
from harness.config.schema import RunConfig, check_phases
from harness.fields import ConfigError


def why_not(config: RunConfig, train_size: int, **train: Any) -> str | None:
    """Why `config` with the training keys `train` in place (batch_schedule as a list of phases) cannot be planned,
    in one line; None where it can."""
    epochs, budget = train.get("epochs", config.train.epochs), train.get("budget", config.train.budget)
    try:
        if train.get("batch_schedule") is not None:
            train["batch_schedule"] = ramp.parse(train["batch_schedule"], epochs, budget)
            train.setdefault("batch_size", train["batch_schedule"][0][1])
        changed = dataclasses.replace(config.train, **train)
        device = config.device
        planned = ramp.plan_run(changed, max(device.gpus, 1), train_size, device.backend, device.jax_host_devices)
        check_phases(config.model, planned, device.backend)
    except ConfigError as err:
        return str(err)
    return None
