"""McCandlish et al. 2018's model of large-batch training, fitted and checked: S = S_min(1 + B_crit/B) from steps
to a target with a bootstrap interval, and the gradient noise scale B_simple pooled over runs with its own.
Numpy and SciPy on numbers; harness.studies.scaling.reading reads the runs and says what they show.

The fit minimises relative errors, Σ((S_i − S_min − S_min·B_crit/B_i)/S_i)², with S_min and S_min·B_crit ≥ 0 (a
linear least squares, scipy.optimize.nnls); its interval comes from BOOTSTRAP replicates that resample every
(batch, learning rate) cell's seeds and choose the learning rates again (harness.assess.intervals.bootstrap_interval:
a level stated only where the cells hold enough seeds for one; below, the bootstrap's range).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.assess.intervals import Interval, bootstrap_interval
from harness.probes import noise_scale

BOOTSTRAP = 1000
FIT_TOLERANCE = 0.25  # the model follows the curve when every measured S lies within 25% of the fitted one
SEED = 0              # the bootstrap's generator: the same report from the same files
PERFECT = 0.2         # the regimes: "perfect scaling": S(2B) within 20% of S(B)/2
NO_GAIN = 0.2         # "no gain": S(2B) within 20% of S(B) or above
RESOLUTION = 0.1      # steps to target resolved to 10% of their value


@dataclass
class Fit:
    s_min: float
    b_crit: float                 # inf when S_min is 0 (S fell as 1/B throughout)
    s_min_interval: Interval
    b_crit_interval: Interval
    worst: tuple[int, float]      # the batch size furthest from the curve, and its relative deviation
    follows: bool                 # every batch size within FIT_TOLERANCE of the curve, both parameters > 0
    replicates: int               # bootstrap replicates with enough batch sizes to fit

    def steps(self, batch) -> np.ndarray:
        return self.s_min * (1 + self.b_crit / np.asarray(batch, dtype=float))


@dataclass
class Noise:
    value: float | None           # B_simple pooled over the runs at the target; None when |G|² is not positive
    interval: Interval | None
    runs: int
    non_positive: int = 0         # bootstrap replicates whose |G|² was not positive (counted as B = ∞)


def fit_curve(batches, steps) -> tuple[float, float]:
    """(S_min, B_crit) of S = S_min(1 + B_crit/B) by relative least squares with both terms ≥ 0; B_crit is inf
    when the fit has no constant term (S fell as 1/B everywhere) and 0 when it has no 1/B term."""
    from scipy.optimize import nnls

    batches, steps = np.asarray(batches, dtype=float), np.asarray(steps, dtype=float)
    design = np.column_stack([1 / steps, 1 / (batches * steps)])
    (s_min, product), _ = nnls(design, np.ones(len(steps)))
    if s_min <= 0:
        return 0.0, math.inf
    return float(s_min), float(product / s_min)


def fit(cells: dict[int, dict[float, np.ndarray]], batches: list[int], steps: list[float],
        replicates: int = BOOTSTRAP) -> Fit | None:
    """The fit to the measured (batch, steps) points with its bootstrap interval; None with fewer than three
    (two parameters). `cells`: batch -> learning rate -> its seeds' steps (inf: never reached), resampled by the
    bootstrap, which chooses each batch size's learning rate again."""
    if len(batches) < 3:
        return None
    s_min, b_crit = fit_curve(batches, steps)
    fitted = s_min * (1 + b_crit / np.asarray(batches, dtype=float)) if math.isfinite(b_crit) else None
    if fitted is None:  # S_min 0: the 1/B term alone
        from scipy.optimize import nnls

        measured = np.asarray(steps, dtype=float)
        (c,), _ = nnls((1 / (np.asarray(batches) * measured))[:, None], np.ones(len(measured)))
        fitted = c / np.asarray(batches, dtype=float)
    deviations = np.asarray(steps, dtype=float) / fitted - 1
    worst = int(np.argmax(np.abs(deviations)))
    rng = np.random.default_rng(SEED)
    units = min(len(steps) for by_lr in cells.values() for steps in by_lr.values())  # the fewest seeds resampled
    if max(len(steps) for by_lr in cells.values() for steps in by_lr.values()) < 2:
        replicates = 0  # one seed per cell: resampling it changes nothing, so there is no interval
    drawn_s, drawn_b = [], []
    for _ in range(replicates):
        xs, ys = [], []
        for batch, by_lr in sorted(cells.items()):
            means = [np.mean(steps[rng.integers(0, len(steps), len(steps))]) for steps in by_lr.values()]
            best = min(means)
            if math.isfinite(best):
                xs.append(batch)
                ys.append(best)
        if len(xs) >= 3:
            s, b = fit_curve(xs, ys)
            drawn_s.append(s)
            drawn_b.append(b)
    follows = bool(np.all(np.abs(deviations) <= FIT_TOLERANCE)) and s_min > 0 and 0 < b_crit < math.inf
    return Fit(s_min, b_crit, bootstrap_interval(drawn_s, units), bootstrap_interval(drawn_b, units),
               (batches[worst], float(deviations[worst])), follows, len(drawn_b))


def noise_at_target(grams: list[np.ndarray], small: int, bootstrap: int = BOOTSTRAP) -> Noise:
    """B_simple = tr(Σ)/|G|² with both unbiased estimators averaged over the runs (each from its own batches'
    Gram matrix), and a bootstrap interval over the runs (none for a single run); a replicate whose |G|² is not
    positive counts as B = ∞, and the point estimate is None (inconclusive) when its own |G|² is not positive."""
    if not grams:
        return Noise(None, None, 0)
    estimates = [noise_scale.from_gram(g, small) for g in grams]
    g2 = float(np.mean([e.grad_norm_sq for e in estimates]))
    trace = float(np.mean([e.grad_trace_cov for e in estimates]))
    value = trace / g2 if g2 > 0 else None
    if not bootstrap or len(grams) < 2:
        return Noise(value, None, len(grams))
    rng = np.random.default_rng(SEED)
    drawn = []
    for _ in range(bootstrap):
        g2_r, trace_r = noise_scale.resampled(estimates, rng)
        drawn.append(trace_r / g2_r if g2_r > 0 else math.inf)
    drawn = np.array(drawn)
    return Noise(value, bootstrap_interval(drawn, len(grams)), len(grams), int(np.sum(~np.isfinite(drawn))))
