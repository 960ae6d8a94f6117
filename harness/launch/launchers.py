"""What the command needs to know of a Hydra launcher before Hydra starts it, as the launcher declares it.

A launcher class says what it does with class attributes, read here without starting it:
- `harness_remote`: its runs go to other machines (SLURM), so this machine's GPUs say nothing of theirs;
- `harness_runs_log_themselves`: each run logs itself to MLflow (tracking=mlflow); False where the command's
  tracking process follows them from their files (harness.launch.tracker.live_by);
- `harness_check_config(launcher_cfg)`: a classmethod that refuses a bad launcher key (ConfigError) before
  anything runs.
A launcher that declares nothing (Hydra's basic one, joblib, a user's) runs on this machine and its runs log
themselves; the few launchers of other projects the harness knows are described in KNOWN.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

# launchers of other projects, by class path: what their classes cannot say themselves
KNOWN = {"hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher": {"remote": True}}


@dataclass(frozen=True)
class LauncherTraits:
    target: str                      # the launcher's class path (hydra.launcher._target_)
    remote: bool = False
    runs_log_themselves: bool = True
    check_config: Callable[[Any], None] | None = None


def traits(target: str) -> LauncherTraits:
    """What the launcher class at `target` declares (defaults for one that declares nothing or cannot be
    imported here: Hydra says so itself when it starts it)."""
    module, _, name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        cls = None
    known = KNOWN.get(target, {})
    return LauncherTraits(
        target=target,
        remote=bool(getattr(cls, "harness_remote", known.get("remote", False))),
        runs_log_themselves=bool(getattr(cls, "harness_runs_log_themselves", known.get("runs_log_themselves", True))),
        check_config=getattr(cls, "harness_check_config", None),
    )
