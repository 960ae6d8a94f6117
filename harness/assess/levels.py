"""What both batch sizes lose to a cause they share: the level beside the drop.

A comparison of batch sizes reads their difference, from which a cause that acts on both cancels: runs that never
learned to validate, or batch-norm statistics whose moving averages still hold mostly their initial values at both
sizes (a keras.applications MobileNetV2's momentum 0.999 after a few hundred steps). The runs measure both without
a new run: val_acc against chance, and v' - v, the accuracy with the statistics recomputed for the final weights
less the accuracy with the moving ones, beside `bn_initial_weight` = momentum^steps. Numbers in, sentences out;
the thresholds are the caller's (the verdicts' chance margin and smallest effect).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

PRECISE_VAL = "val_acc_precise_bn"


@dataclass(frozen=True)
class Level:
    """One batch size's (or arm's) runs, mean over seeds."""

    batch: int
    val_acc: float
    val_acc_precise: float    # with the statistics recomputed; NaN without batch norm
    bn_initial_weight: float  # NaN without batch norm
    steps: float

    @property
    def stale(self) -> float:
        """v' - v: what the moving statistics cost this size (NaN without batch norm)."""
        return self.val_acc_precise - self.val_acc


def of_runs(batch: int, runs: pd.DataFrame) -> Level:
    """The level of runs' final rows (val_acc, and where the model has batch norm its recomputed accuracy)."""
    def mean(column: str) -> float:
        return float(runs[column].mean()) if column in runs and runs[column].notna().any() else math.nan
    return Level(batch, mean("val_acc"), mean(PRECISE_VAL), mean("bn_initial_weight"), mean("step"))


def at_chance(small: Level, large: Level, chance: float, margin: float) -> bool:
    return max(small.val_acc, large.val_acc) < chance + margin


def stale_at_both(small: Level, large: Level, drop: float, smallest: float) -> bool:
    """Stale statistics cost each size at least `smallest`, and more than the drop between them."""
    return all(math.isfinite(x) and x >= smallest and x > abs(drop) for x in (small.stale, large.stale))


def stale_sentences(small: Level, large: Level) -> list[str]:
    """The statistics at both sizes, their recomputed accuracies, and what to do from the momentum the runs have
    (bn_initial_weight^(1/steps) at the larger batch)."""
    w_b, w_big = small.bn_initial_weight, large.bn_initial_weight
    mostly = "mostly their initial values" if min(w_b, w_big) > 0.5 else "still partly their initial values"
    said = [f"At both batch sizes, the batch-norm statistics are {mostly} (bn_initial_weight {w_b:.2f} at batch "
            f"{small.batch}, {w_big:.2f} at batch {large.batch}); recomputed for the final weights, batch "
            f"{small.batch} reaches {small.val_acc_precise:.2f} and batch {large.batch} {large.val_acc_precise:.2f}."]
    steps = large.steps
    momentum = w_big ** (1.0 / steps) if steps > 0 and w_big > 0 else math.nan
    if not math.isfinite(momentum):
        return [*said, "What to do: more steps, a lower model.bn_momentum, or reading val_acc_precise_bn."]
    lower = 0.9 if momentum > 0.9 else 0.5
    return [*said, f"What to do: a lower model.bn_momentum (these runs' averages move at {momentum:.3g} a step; at "
                   f"{lower:g} they keep {lower ** steps:.2g} of their start after batch {large.batch}'s {steps:.0f} "
                   "steps), more steps, or reading val_acc_precise_bn, the accuracy with the statistics recomputed."]


def reading(small: Level, large: Level, drop: float, chance: float, *, margin: float, smallest: float) -> str | None:
    """What both sizes lose to a cause they share, said before the split of the difference between them; None when
    they neither validate at chance nor lose more than the drop to their moving statistics."""
    failed, stale = at_chance(small, large, chance, margin), stale_at_both(small, large, drop, smallest)
    if not (failed or stale):
        return None
    sentences = []
    if failed:
        sentences.append(f"Neither batch size learned to validate: val_acc {small.val_acc:.2f} at batch {small.batch} "
                         f"and {large.val_acc:.2f} at batch {large.batch}, chance {chance:.2f}.")
    if stale:
        sentences += stale_sentences(small, large)
    elif failed:
        sentences.append("The split below is of a difference between two failures, not of a drop from a model that "
                         "learned.")
    return " ".join(sentences)


SHARED_CHECKS = {"label_shift": "a label shift between training and validation",
                 "feature_shift": "an input shift between training and validation"}


def shared_checks(checks: list[dict]) -> list[str]:
    """For each flagged data check that acts on both sizes alike (the same data feeds both), that it does: it lowers
    both accuracies by an amount no run here measures, and cancels out of their difference and of its parts."""
    return [f"{SHARED_CHECKS[c['name']][0].upper()}{SHARED_CHECKS[c['name']][1:]} is flagged ({c['name']}): it "
            "acts on both batch sizes alike, since the same data feeds both, so it can lower both accuracies while "
            "it cancels out of the drop between them; none of the parts above contains it."
            for c in checks if c.get("flagged") and c.get("name") in SHARED_CHECKS]
