"""+study=recover's budget round read from its runs: each length's mean tune_acc against b's and its wall time
(Length), for the recipe (arms budget_<epochs>) and for the best confirmed rule run beside a recipe that is not a
rule (budget_<epochs>_trial_<k>). Files in, numbers out."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.assess.analysis import BATCH


@dataclass(frozen=True)
class Length:
    """One length of the budget round: the recipe at `epochs` (every seed) against b's tuning accuracy."""

    epochs: int
    multiple: float                  # epochs / E
    tune_acc: float | None           # mean over its seeds (a failed or diverged run counted as 0)
    runs: int                        # its runs that finished
    reached: bool                    # tune_acc >= b's mean tune_acc
    wall_ratio: float | None         # its training time over b's at E, from the runs' samples per second


def length(epochs: int, base_epochs: int, tune: list[float], speed: list[float], small_tune: float | None,
           small_speed: float | None, seeds: int = 0) -> Length:
    """A budget length from its finished runs' final tune_acc (of `seeds` runs: one that failed or diverged counts
    as 0) and median samples per second, and b's (means over seeds): B trains `epochs` x the samples b does in its
    E epochs, at its own speed."""
    multiple = epochs / base_epochs
    mean = float(np.sum(tune)) / max(seeds, len(tune)) if tune else None
    reached = mean is not None and small_tune is not None and mean >= small_tune
    ratio = None if not speed or not small_speed else multiple * small_speed / float(np.mean(speed))
    return Length(epochs, multiple, mean, len(tune), reached, ratio)


def speeds(done: pd.DataFrame) -> pd.DataFrame:
    """Each finished run's median samples per second over its epochs (`done`: their epochs), with its arm and
    batch."""
    return done.groupby("run_id").agg(arm=("arm", "first"), batch=(BATCH, "first"),
                                      speed=("samples_per_second", "median"))


def best_rule(r) -> int | None:
    """The confirmed rule with the best mean tune_acc, which the budget runs beside a recipe that is not a rule."""
    if r.recipe is None or r.trials[r.recipe].source == "rule":
        return None
    rules = [(tune, -k) for k, tune, _ in r.confirmed if tune is not None and r.trials[k].source == "rule"]
    return -max(rules)[1] if rules else None


def lengths(r, chosen: pd.DataFrame, speeds: pd.DataFrame, plan: dict[str, Any], arm_of: dict[str, str],
            small_speed: float | None, suffix: str = "") -> list[Length]:
    """Each budget length whose runs have all ended, in order: its mean tune_acc against b's, its wall time against
    b's `small_speed` (the recipe's arms budget_<epochs>; `suffix` "_trial_<k>": the rule's beside it)."""
    lengths = sorted({length for length in (_epochs_of(arm, suffix) for arm in arm_of.values())
                      if length is not None})
    out = []
    for epochs in lengths:
        arm = f"budget_{epochs}{suffix}"
        tune = chosen.loc[chosen["arm"] == arm, "tune_acc"].dropna().tolist()
        speed = speeds.loc[speeds["arm"] == arm, "speed"].dropna().tolist()
        out.append(length(epochs, plan["epochs"], tune, speed, r.small_tune, small_speed, seeds=len(plan["seeds"])))
    return out


def _epochs_of(arm: str, suffix: str) -> int | None:
    """The epochs of a budget arm budget_<epochs><suffix> (None for any other arm)."""
    if not arm.startswith("budget_"):
        return None
    epochs, _, rest = arm[len("budget_"):].partition("_")
    return int(epochs) if (f"_{rest}" if rest else "") == suffix else None
