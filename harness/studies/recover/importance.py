"""What mattered in +study=recover's search: each knob's importance for tune_acc over the trials, by scikit-learn's
permutation importance of a random forest fitted to them (Breiman 2001; sklearn.inspection.permutation_importance),
with how uncertain it is: the spread over forests of other seeds and over permutations, and the forest's
out-of-bag R², how much of tune_acc the knobs explain at all. With 16 trials these are rough, and the reading says so.
The permutations are scored on the forest's trees summed as RandomForestRegressor.predict sums them (`_Trees`): the
same numbers bit for bit, without predict's per-tree checks and dispatch, which were 93% of a 16-trial reading.

A range is one column (log10 where the search drew it log-uniformly: lr_factor, 1 - momentum, weight_decay); a
choice is one column of its options' codes (a tree splits codes as groups of options). Files in, numbers out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

FORESTS = 5      # forests of different seeds: the importance's spread over the forest's own randomness
REPEATS = 10     # permutations of each column per forest
TREES = 100
WEAK_FIT = 0.3   # an out-of-bag R² below this: the knobs explain little of tune_acc
LOG = {"lr_factor": lambda v: math.log10(v), "momentum": lambda v: math.log10(1.0 - v),
       "weight_decay": lambda v: math.log10(v) if v > 0 else -12.0}


@dataclass(frozen=True)
class Importance:
    key: str
    mean: float     # the mean drop in R² on the trials when the key's column is permuted
    sd: float       # its spread over forests and permutations


@dataclass(frozen=True)
class Importances:
    trials: int
    r2_oob: float | None          # the forests' mean out-of-bag R² (None: too few trials to tell)
    keys: list[Importance]        # most important first
    at_epoch: int | None = None   # tune_acc at this epoch (the first rung, where every trial was), not the final

    def sentence(self) -> str:
        fit = "" if self.r2_oob is None else f"; out-of-bag R² {self.r2_oob:.2f}"
        listed = ", ".join(f"{i.key} {i.mean:.3f} ± {i.sd:.3f}" for i in self.keys)
        which = "finished trials" if self.at_epoch is None else f"trials at epoch {self.at_epoch} (the first rung)"
        opening = (f"What mattered for tune_acc over the {self.trials} {which} (permutation importance of a "
                   f"random forest, scikit-learn{fit}): {listed}.")
        if self.r2_oob is not None and self.r2_oob <= 0:
            return (opening + " The forest predicts tune_acc from the knobs no better than their mean: these "
                    "importances say nothing about the knobs.")
        little = ("" if self.r2_oob is None or self.r2_oob >= WEAK_FIT else " The forest explains little of tune_acc "
                  f"from the knobs (out-of-bag R² below {WEAK_FIT}): read the order, not the sizes.")
        return (opening + f" With {self.trials} trials they are rough: an importance within its spread (±) of 0 "
                f"is not told apart from none, and a knob can matter only beside another.{little}")


def _column(key: str, values: list[Any]) -> np.ndarray:
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return np.array([LOG[key](v) if key in LOG else float(v) for v in values])
    options = sorted({str(v) for v in values})
    return np.array([float(options.index(str(v))) for v in values])


def importances(recipes: list[dict[str, Any]], tune_acc: list[float], at_epoch: int | None = None
                ) -> Importances | None:
    """The knobs' importance for tune_acc over finished trials (`recipes`, their `tune_acc`, at `at_epoch` where
    not the final one); None with fewer than 4 trials or no spread in tune_acc. Knobs the trials all share are left
    out."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import permutation_importance

    y = np.asarray(tune_acc, dtype=float)
    if len(y) < 4 or np.ptp(y) == 0:
        return None
    keys = [k for k in dict.fromkeys(k for r in recipes for k in r) if len({str(r.get(k)) for r in recipes}) > 1]
    if not keys:
        return None
    x = np.column_stack([_column(k, [r.get(k) for r in recipes]) for k in keys])
    scores, fits = [], []
    for seed in range(FORESTS):
        forest = RandomForestRegressor(n_estimators=TREES, min_samples_leaf=2, oob_score=len(y) >= 8,
                                       random_state=seed, n_jobs=1).fit(x, y)
        if len(y) >= 8:
            fits.append(forest.oob_score_)
        scores.append(permutation_importance(_trees(forest), x, y, n_repeats=REPEATS, random_state=seed).importances)
    found = np.concatenate(scores, axis=1)  # keys x (forests x repeats)
    ranked = sorted((Importance(k, float(found[i].mean()), float(found[i].std(ddof=1))) for i, k in enumerate(keys)),
                    key=lambda i: -i.mean)
    return Importances(len(y), float(np.mean(fits)) if fits else None, ranked, at_epoch)


def _trees(forest):
    """The fitted forest as an estimator whose predict is the forest's: each tree's prediction on float32 inputs,
    summed in the trees' order in float64 and divided by their number, as RandomForestRegressor.predict sums them
    one tree at a time (n_jobs=1), without its per-tree input checks and joblib dispatch (tests/studies/recover:
    equal bit for bit)."""
    from sklearn.base import BaseEstimator, RegressorMixin

    class _Trees(RegressorMixin, BaseEstimator):
        def fit(self, x, y):  # permutation_importance takes an estimator with fit; this one is fitted
            return self

        def predict(self, x):
            x = np.ascontiguousarray(x, dtype=np.float32)
            out = np.zeros(x.shape[0])
            for tree in forest.estimators_:
                out += tree.tree_.predict(x)[:, 0]
            return out / len(forest.estimators_)

    return _Trees()
