"""Intervals and tests over seeds, for every verdict that claims a difference: Welch's unequal-variance interval
and p-value for two groups of runs, and Student's t interval of one group's mean."""
from __future__ import annotations

import warnings

import numpy as np
from scipy import stats


def welch_interval(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Confidence interval for mean(a) - mean(b) with unequal variances (Welch's t-test)."""
    if np.var(a, ddof=1) + np.var(b, ddof=1) == 0.0:  # identical seeds: SciPy's interval would be NaN
        diff = float(np.mean(a) - np.mean(b))
        return diff, diff
    with warnings.catch_warnings():  # one group of identical seeds is exact, not "catastrophic cancellation"
        warnings.simplefilter("ignore", RuntimeWarning)
        interval = stats.ttest_ind(a, b, equal_var=False).confidence_interval(level)
    return float(interval.low), float(interval.high)


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Confidence interval for the mean of `values` (Student's t, n - 1 degrees of freedom); needs two or more
    values. Identical values give the value itself."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    spread = float(values.std(ddof=1))
    if spread == 0.0:
        return mean, mean
    half = float(stats.t.ppf(0.5 + level / 2, len(values) - 1)) * spread / np.sqrt(len(values))
    return mean - half, mean + half


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Welch t-test p-value; identical seeds on both sides give 0 for different means, 1 for equal."""
    if np.var(a, ddof=1) + np.var(b, ddof=1) == 0.0:
        return 0.0 if np.mean(a) != np.mean(b) else 1.0
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def ratio_interval(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Fieller's confidence interval for mean(x) / mean(y) from paired values (x_i, y_i) of the same seeds: every
    ratio r whose contrast x - r y has a t-interval covering 0. None where that set is unbounded (mean(y) is not
    itself shown to differ from 0 at this level: the ratio can be anything). Needs two or more pairs."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    q2 = float(stats.t.ppf(0.5 + level / 2, n - 1)) ** 2 / n
    covariance = np.cov(x, y, ddof=1)
    a = y.mean() ** 2 - q2 * covariance[1, 1]
    b = -2.0 * (x.mean() * y.mean() - q2 * covariance[0, 1])
    c = x.mean() ** 2 - q2 * covariance[0, 0]
    if a <= 0.0:
        return None
    half = np.sqrt(max(b * b - 4.0 * a * c, 0.0))
    return float((-b - half) / (2.0 * a)), float((-b + half) / (2.0 * a))


def seeds_to_show(values: np.ndarray, margin: float, level: float = 0.95, most: int = 1000) -> int | None:
    """About how many seeds would put the t-interval of the mean of `values` wholly on the side of `margin` its mean
    lies on (below it: non-inferiority shown; above it: shown to exceed it), were their mean and spread what these
    seeds give (None: the mean is the margin, or more than `most` seeds)."""
    values = np.asarray(values, dtype=float)
    mean, spread = float(values.mean()), float(values.std(ddof=1))
    if mean == margin:
        return None
    for n in range(2, most + 1):
        if float(stats.t.ppf(0.5 + level / 2, n - 1)) * spread / np.sqrt(n) <= abs(margin - mean):
            return n
    return None
