"""The statistics kit every study's comparison over seeds calls: intervals whose stated level is their coverage.
Welch's unequal-variance interval and p-value for two groups of runs, Student's t interval of one group's mean
(paired differences), Fieller's for a ratio of paired means, a ratio of paired times on the log scale, the median's
order-statistic interval, and a percentile bootstrap that states a level only where the seeds are enough for it.
Where the seeds are too few for a level, the interval is called the seeds' range; with one seed there is none.
tests/assess/test_intervals.py simulates seeds from known distributions and checks each level."""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

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

    def shows(n: int) -> bool:  # the half-width t(n - 1) s / sqrt(n) falls as n grows: a binary search finds the least
        return float(stats.t.ppf(0.5 + level / 2, n - 1)) * spread / np.sqrt(n) <= abs(margin - mean)

    if not shows(most):
        return None
    low, high = 2, most
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if shows(middle) else (middle + 1, high)
    return low


# ---- the claims every study makes over seeds: an interval's stated level is its coverage ----------------------------

LEVEL = 0.95
NEW_RUN = "new-run prediction t"  # new_run_interval's method
BOOTSTRAP_UNITS = 8  # a percentile bootstrap over fewer seeds than this covers less than its level (77% at 3): a range


@dataclass(frozen=True)
class Interval:
    """An interval over n seeds and the coverage its method holds at that n (`level`); None where no level holds (a
    percentile bootstrap over few seeds: the seeds' range), and no interval at all with one seed."""

    low: float
    high: float
    level: float | None
    n: int
    method: str  # "t", "log-ratio t", "order statistics", "bootstrap", "range", "prediction t", NEW_RUN
    family: int = 1  # > 1: one of as many intervals that hold `level` together (Bonferroni: each at 1 - (1 - level)/k)
    center: float = math.nan  # a prediction interval's point prediction (new_run_interval: the runs' geometric mean)

    @property
    def claims(self) -> bool:
        """Whether a claim may stand on it: two or more seeds and a stated level."""
        return self.n >= 2 and self.level is not None

    def above(self, value: float) -> bool:
        """The whole interval lies above `value`, at its stated level."""
        return self.claims and self.low > value

    def below(self, value: float) -> bool:
        return self.claims and self.high < value

    @property
    def label(self) -> str:
        """What the interval is, in a few words: "95% interval", "75% interval (the 3 seeds' range)"."""
        if self.n < 2:
            return "one seed: no interval"
        if self.level is None:
            return f"the {self.n} seeds' bootstrap range, no stated level"
        level = f"{100 * self.level:.0f}% interval"
        if self.family > 1:
            level += f", simultaneous over {self.family}"
        return f"{level} (the {self.n} seeds' range)" if self.method == "range" else level

    def as_json(self) -> dict:
        return {"low": _finite(self.low), "high": _finite(self.high), "level": self.level, "n": self.n,
                "method": self.method, **({"family": self.family} if self.family > 1 else {}),
                **({"center": self.center} if math.isfinite(self.center) else {})}


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def median_interval(values, level: float = LEVEL) -> Interval:
    """The distribution-free interval for the median of `values` (times over seeds; an infinite one, a missed
    target, is just the largest): order statistics x(j) and x(n+1-j), the innermost pair whose coverage,
    1 - 2 P(Binomial(n, 1/2) < j), is at least `level`, and that coverage stated exactly. Below six seeds even the
    extremes fall short of 95%: the interval is the seeds' range and its level what the range covers (75% at 3)."""
    ordered = np.sort(np.asarray(values, dtype=float))
    n = len(ordered)
    if n < 2:
        value = float(ordered[0]) if n else math.nan
        return Interval(value, value, None, n, "none")
    j, coverage = _order_statistic(n, level)
    return Interval(float(ordered[j - 1]), float(ordered[n - j]), coverage, n,
                    "order statistics" if coverage >= level - 1e-12 else "range")


@functools.lru_cache(maxsize=None)
def _order_statistic(n: int, level: float) -> tuple[int, float]:
    """(j, the exact coverage of [x(j), x(n+1-j)] for the median): the largest j whose coverage reaches `level`, else
    1 (the range)."""
    coverage = [float(1 - 2 * stats.binom.cdf(j - 1, n, 0.5)) for j in range(1, n // 2 + 1)]
    j = max((j for j, c in enumerate(coverage, start=1) if c >= level - 1e-12), default=1)
    return j, coverage[j - 1]


@dataclass(frozen=True)
class Ratio:
    """How many times `top` the paired `bottom` is: the geometric mean of the per-seed ratios, a t-interval on their
    logs (df = n - 1), and the seeds left out because `top` was infinite there (a slower side that never got there:
    said, and the bound comes from the others)."""

    value: float
    interval: Interval
    left_out: tuple[int, ...] = ()
    logs: tuple[float, ...] = ()  # the per-seed log ratios the interval is drawn from
    each: float = LEVEL           # the level of this one interval (1 - (1 - level)/k among k)

    @property
    def seeds_to_show(self) -> int | None:
        """Where the interval reaches 1: about how many seeds would put it wholly on the side of 1 its value lies
        on, were their mean and spread these (None: shown already, or no estimate)."""
        logs = np.asarray(self.logs)
        if len(logs) < 2 or not self.interval.low <= 1.0 <= self.interval.high or logs.std(ddof=1) == 0:
            return None
        return seeds_to_show(logs, 0.0, self.each)


def paired_ratio(top, bottom, level: float = LEVEL, comparisons: int = 1) -> Ratio:
    """top_i / bottom_i paired by seed (times to a target: b's over the answer's is the speed-up). A paired t-interval
    on log(top_i / bottom_i) holds its level at 3 seeds under log-normal spread, where a bootstrap is the range. A
    seed with `top` infinite is left out; `bottom` must be finite (a side that missed is disqualified before).
    `comparisons` k > 1: the interval is one of k that hold `level` together (each at 1 - (1 - level)/k), so it holds
    for whichever of the k was picked after a look at them (the least time among k batch sizes)."""
    top, bottom = np.asarray(top, dtype=float), np.asarray(bottom, dtype=float)
    if not np.isfinite(bottom).all():
        raise ValueError("paired_ratio: every seed of the denominator must be finite")
    kept = np.isfinite(top)
    logs = np.log(top[kept] / bottom[kept])
    left_out = tuple(int(i) for i in np.flatnonzero(~kept))
    if len(logs) == 0:
        return Ratio(math.inf, Interval(math.inf, math.inf, None, 0, "none"), left_out)
    value = float(np.exp(logs.mean()))
    if len(logs) < 2:
        return Ratio(value, Interval(value, value, None, 1, "none"), left_out)
    each = 1 - (1 - level) / comparisons
    low, high = t_interval(logs, each)
    return Ratio(value, Interval(float(np.exp(low)), float(np.exp(high)), level, len(logs), "log-ratio t",
                                 comparisons), left_out, tuple(float(x) for x in logs), each)


def bootstrap_interval(draws, units: int, level: float = LEVEL) -> Interval:
    """The percentile interval of bootstrap `draws` (a statistic recomputed on resampled seeds; infinite draws kept
    as they are), its level stated only where `units`, the fewest seeds resampled, reach BOOTSTRAP_UNITS: below, it
    is about the seeds' range and covers far less than its level (77% at 3 seeds), so it is called a range."""
    draws = np.asarray(draws, dtype=float)
    if len(draws) == 0:
        return Interval(math.nan, math.nan, None, units, "none")
    alpha = (1 - level) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha], method="inverted_cdf")  # a draw itself, never inf - inf
    stated = level if units >= BOOTSTRAP_UNITS else None
    return Interval(float(low), float(high), stated, units, "bootstrap")


def prediction_interval(pair_log_differences, center: float, level: float = LEVEL) -> Interval:
    """Where one new run's time should fall, around `center` (the prediction from the mean of two timed runs of its
    command), from pairs of timed runs of the same commands: each pair's difference of log times has variance 2σ²
    (σ the spread of one run on this machine), pooled over the pairs (df = their number); a new run's log deviation
    from its two runs' mean then has variance σ²(1 + 1/2): a t prediction interval on the log scale. None of a level
    without a pair."""
    d = np.asarray(pair_log_differences, dtype=float)
    if len(d) == 0 or not math.isfinite(center):
        return Interval(center, center, None, len(d), "none")
    sigma = math.sqrt(float(np.mean(d ** 2)) / 2)
    half = float(stats.t.ppf(0.5 + level / 2, len(d))) * sigma * math.sqrt(1.5)
    return Interval(center * math.exp(-half), center * math.exp(half), level, len(d), "prediction t")


def new_run_interval(times, level: float = LEVEL) -> Interval:
    """Where one more run's time should fall, from n runs of the same command on seeds of their own (each a fresh
    process: the seed's steps and the machine's spread both in them): a t prediction interval on the log scale,
    exp(mean log t +- t(n - 1) s sqrt(1 + 1/n)), centred on the runs' geometric mean. No level below two runs."""
    logs = np.log(np.asarray(times, dtype=float))
    n = len(logs)
    if n == 0:
        return Interval(math.nan, math.nan, None, 0, "none")
    center = float(np.exp(logs.mean()))
    if n < 2:
        return Interval(center, center, None, 1, "none", center=center)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * float(logs.std(ddof=1)) * math.sqrt(1 + 1 / n)
    return Interval(center * math.exp(-half), center * math.exp(half), level, n, NEW_RUN, center=center)
