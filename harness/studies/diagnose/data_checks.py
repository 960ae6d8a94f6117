"""The suspects of "high train accuracy, low validation accuracy" that live in the data, checked on a user's own
training and validation arrays exactly as the model is fed them, the way data-validation tools check a train/test
split (deepchecks' train-test suite). One Check per suspect:

- label_shift: the class shares differ between the splits (Cramér's V of split x class, deepchecks' label-drift
  statistic and threshold 0.15, with a chi-squared p-value so a small sample's noise is not read as a shift);
- order: the labels come in runs of one class (class-sorted, unshuffled data);
- feature_shift: the inputs differ between the splits within classes (a domain classifier's 2 * AUC - 1,
  deepchecks' multivariate-drift score and threshold 0.25, on at most 10,000 rows a split). TensorFlow Data
  Validation's per-feature L-infinity distance and Jensen-Shannon divergence have no default threshold, and the
  divergence grows with the sample size, so one classifier over all inputs is the measure here;
- capacity: training accuracy above a tuning slice held out of the training split (not the validation split, so a
  train/validation shift is not read as overfitting).

It never refuses data: harness.data.validity refuses invalid data; this module only reports. numpy, SciPy and
scikit-learn: no backend.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import chi2_contingency

LABEL_SHIFT_THRESHOLD = 0.15        # deepchecks' label drift (Cramér's V)
LABEL_SHIFT_P_VALUE = 0.01          # and the chi-squared test must reject equal shares at this level
ORDER_THRESHOLD = 0.5               # half way from a random order to one run per class
FEATURE_SHIFT_THRESHOLD = 0.25      # deepchecks' multivariate drift (2 * AUC - 1 of a domain classifier)
FEATURE_SHIFT_MAX_SAMPLES = 10_000  # rows a split, as deepchecks samples
FEATURE_SHIFT_FOLDS = 5
CAPACITY_THRESHOLD = 0.10           # train_eval_acc - tune_acc at the small batch
MAX_ITER = 300                      # lbfgs converges well within this on standardised inputs
TOP_INPUTS = 3


@dataclass(frozen=True)
class Check:
    name: str                 # "label_shift", "order", "feature_shift" or "capacity"
    statistic: float | None   # None: not measurable (then flagged is False and detail says why)
    threshold: float
    flagged: bool
    detail: str               # one or two sentences with the numbers
    seconds: float            # the check's wall time
    extra: dict = field(default_factory=dict)  # the other numbers, JSON-ready

    def as_dict(self) -> dict:
        """The check as one JSON-ready dict: its fields with `extra` spread beside them."""
        fields = asdict(self)
        return {**{k: v for k, v in fields.items() if k != "extra"}, **fields["extra"]}


def _check(name: str, started: float, statistic, threshold: float, flagged, detail: str, **extra) -> Check:
    statistic = None if statistic is None else float(statistic)
    return Check(name, statistic, float(threshold), bool(flagged), detail, time.perf_counter() - started, extra)


def _p_text(p: float) -> str:
    return "p < 1e-300" if p < 1e-300 else f"p = {p:.2g}"


def label_shift(y_train: np.ndarray, y_val: np.ndarray, num_classes: int, classes: list[str] | None = None,
                threshold: float = LABEL_SHIFT_THRESHOLD, p_value: float = LABEL_SHIFT_P_VALUE) -> Check:
    """Do the class shares differ between the splits? Cramér's V of the split x class table, flagged when it
    exceeds `threshold` and the chi-squared test's p-value is below `p_value`."""
    started = time.perf_counter()
    table = np.stack([np.bincount(np.asarray(y, dtype=np.int64).ravel(), minlength=num_classes)
                      for y in (y_train, y_val)])
    present = np.flatnonzero(table.sum(axis=0) > 0)

    def name(k: int) -> str:
        return str(classes[k]) if classes is not None else str(k)

    if table[0].sum() == 0 or table[1].sum() == 0:
        empty = "training" if table[0].sum() == 0 else "validation"
        return _check("label_shift", started, None, threshold, False, f"The {empty} split has no samples: no class "
                      "shares to compare.")
    if len(present) < 2:
        return _check("label_shift", started, 0.0, threshold, False, f"Every sample is class {name(present[0])}: "
                      "the two splits' class shares are equal.", p_value=1.0, tvd=0.0)
    kept = table[:, present]
    chi2, p, _, _ = chi2_contingency(kept, correction=False)
    v = float(np.sqrt(chi2 / (kept.sum() * (min(kept.shape) - 1))))
    shares = kept / kept.sum(axis=1, keepdims=True)
    tvd = 0.5 * float(np.abs(shares[0] - shares[1]).sum())
    over = int(np.argmax(shares[0] - shares[1]))
    label = name(present[over])
    detail = (f"Cramér's V {v:.2f} between split and class (chi-squared {_p_text(p)}); class {label} is "
              f"{shares[0, over]:.1%} of training and {shares[1, over]:.1%} of validation (total variation "
              f"{tvd:.2f}).")
    return _check("label_shift", started, v, threshold, v > threshold and p < p_value, detail, p_value=float(p),
                  tvd=tvd, over_represented=label, train_share=float(shares[0, over]),
                  val_share=float(shares[1, over]))


def order(y_fed: np.ndarray, shuffle: bool, threshold: float = ORDER_THRESHOLD) -> Check:
    """Do the labels come in runs of one class? The share f of consecutive pairs with the same label against its
    expectation e under a random order (the sum of squared class shares): (f - e) / (1 - e), 0 for a random order
    and 1 for one run per class. With `shuffle`, `y_fed` is one representative shuffled epoch."""
    started = time.perf_counter()
    y = np.asarray(y_fed).ravel()
    if len(y) < 2:
        return _check("order", started, None, threshold, False, f"{len(y)} sample(s) fed: no consecutive pairs.")
    same = float(np.mean(y[1:] == y[:-1]))
    _, counts = np.unique(y, return_counts=True)
    expected = float(np.sum((counts / len(y)) ** 2))
    statistic = 0.0 if expected == 1.0 else (same - expected) / (1.0 - expected)
    flagged = statistic >= threshold
    epoch = ("In one shuffled epoch (the order is drawn anew every epoch)" if shuffle
             else "In the order fed every epoch (no shuffling)")
    detail = (f"{epoch}, {same:.1%} of consecutive samples share a class, against {expected:.1%} in a random order "
              f"(statistic {statistic:.2f}).")
    if flagged:
        detail += " Each step sees runs of one class rather than a mix of classes."
    return _check("order", started, statistic, threshold, flagged, detail, f=same, e=expected)


def _canonical(x: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The rows in an order that depends on their content alone (label, then the input's bytes), so subsampling
    and folds do not change when the caller permutes the rows; equal rows are interchangeable."""
    rows = np.ascontiguousarray(x).view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()
    by_content = np.argsort(rows, kind="stable")
    return by_content[np.argsort(codes[by_content], kind="stable")]


def _sample(x, codes, max_samples: int, rng: np.random.Generator):
    x = np.asarray(x)
    x = x.reshape(len(x), -1)
    index = _canonical(x, codes)
    if len(index) > max_samples:
        index = index[np.sort(rng.choice(len(index), max_samples, replace=False))]
    return x[index].astype(np.float64), codes[index]


PROPERTIES = ("sample mean", "sample std", "sample min", "sample max")


def _with_properties(x: np.ndarray) -> np.ndarray:
    """Each sample's inputs and its PROPERTIES: a linear classifier sees a shift of the inputs' means, but not a
    change of their scale around a mean of 0 (validation never normalised, x255), which its std shows at once;
    deepchecks reads image drift from such properties (brightness, contrast) too."""
    return np.column_stack([x, x.mean(axis=1), x.std(axis=1), x.min(axis=1), x.max(axis=1)])


def _counted(x_a, c_a, x_b, c_b, num_labels: int, folds: int):
    """(x, is_val, class code, number of classes) over the classes with `folds` or more rows in both splits: a
    class one split lacks says nothing about the inputs, and stratified folds need one of each per fold."""
    counts = np.stack([np.bincount(c, minlength=num_labels) for c in (c_a, c_b)])
    counted = np.flatnonzero(counts.min(axis=0) >= folds)
    remap = np.full(num_labels, -1)
    remap[counted] = np.arange(len(counted))
    keep_a, keep_b = remap[c_a] >= 0, remap[c_b] >= 0
    is_val = np.concatenate([np.zeros(keep_a.sum(), np.int64), np.ones(keep_b.sum(), np.int64)])
    code = np.concatenate([remap[c_a[keep_a]], remap[c_b[keep_b]]])
    return np.concatenate([x_a[keep_a], x_b[keep_b]]), is_val, code, len(counted)


def _out_of_fold(x, is_val, strata, weights, folds: int, seed: int) -> np.ndarray:
    # scikit-learn here, not at the top: every sweep's main process reads the diagnosis module (the studies'
    # registry), and only the run that checks a diagnosis's data fits a classifier (0.2 s of import each)
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    scores = np.empty(len(x))
    with warnings.catch_warnings():
        # an unconverged fit still ranks the samples, which is all the AUC reads
        warnings.simplefilter("ignore", ConvergenceWarning)
        for fit, held in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(x, strata):
            scaler = StandardScaler().fit(x[fit])
            model = LogisticRegression(max_iter=MAX_ITER)
            model.fit(scaler.transform(x[fit]), is_val[fit], sample_weight=weights[fit])
            scores[held] = model.decision_function(scaler.transform(x[held]))
    return scores


def _standardised_differences(x, is_val, codes, num_classes: int) -> np.ndarray:
    """Per input: validation minus training mean, averaged over classes with equal weight, over the pooled
    within-(split, class) standard deviation (the whole sample's where that is 0, e.g. an input constant within
    every cell)."""
    means = np.zeros((2, num_classes, x.shape[1]))
    variances = np.zeros_like(means)
    for split in (0, 1):
        for k in range(num_classes):
            cell = x[(is_val == split) & (codes == k)]
            means[split, k], variances[split, k] = cell.mean(axis=0), cell.var(axis=0)
    difference = (means[1] - means[0]).mean(axis=0)
    pooled = np.sqrt(variances.mean(axis=(0, 1)))
    pooled = np.where(pooled > 0, pooled, x.std(axis=0))
    return np.divide(difference, pooled, out=np.zeros_like(difference), where=pooled > 0)


def feature_shift(x_train: np.ndarray, y_train: np.ndarray, x_val: np.ndarray, y_val: np.ndarray,
                  threshold: float = FEATURE_SHIFT_THRESHOLD, max_samples: int = FEATURE_SHIFT_MAX_SAMPLES,
                  seed: int = 0, feature_names: list[str] | None = None, folds: int = FEATURE_SHIFT_FOLDS) -> Check:
    """Do the inputs differ between the splits within classes? A logistic-regression domain classifier, out of
    fold, separates training rows from validation rows; the statistic is 2 * AUC - 1, kept raw (slightly negative
    when the splits match) and flagged only at `threshold` or above.

    Rows are weighted 1 / count(split, class), so each split and each class within a split weigh the same: a
    label shift alone does not read as an input shift. The classifier reads each sample's inputs and their
    PROPERTIES (a scale change shows in those). Only classes with at least `folds` rows in both
    splits count. At most `max_samples` rows a split, drawn with `seed` from a content order, so permuting the
    rows leaves the statistic unchanged. Also names the inputs whose class-weighted standardised means differ most.
    """
    started = time.perf_counter()
    y_train, y_val = np.asarray(y_train).ravel(), np.asarray(y_val).ravel()
    labels, codes = np.unique(np.concatenate([y_train, y_val]), return_inverse=True)
    rng = np.random.default_rng(seed)
    x_a, c_a = _sample(x_train, codes[:len(y_train)], max_samples, rng)
    x_b, c_b = _sample(x_val, codes[len(y_train):], max_samples, rng)
    x_a, x_b = _with_properties(x_a), _with_properties(x_b)
    x, is_val, code, counted = _counted(x_a, c_a, x_b, c_b, len(labels), folds)
    if counted == 0:
        return _check("feature_shift", started, None, threshold, False, f"No class has {folds} or more samples in "
                      "both splits: the inputs could not be compared within classes.", classes_counted=0)
    cell = is_val * counted + code
    weights = len(x) / (2 * counted * np.bincount(cell)[cell])
    from sklearn.metrics import roc_auc_score

    auc = float(roc_auc_score(is_val, _out_of_fold(x, is_val, cell, weights, folds, seed), sample_weight=weights))
    statistic = 2.0 * auc - 1.0
    differences = _standardised_differences(x, is_val, code, counted)
    sizes = np.bincount(is_val, minlength=2)
    top = np.argsort(-np.abs(differences), kind="stable")[:TOP_INPUTS]
    inputs = list(feature_names) if feature_names is not None else [f"input {i}" for i in range(x.shape[1] - 4)]
    names = [[*inputs, *PROPERTIES][i] for i in top]
    flagged = statistic >= threshold
    listed = ", ".join(f"{n} ({differences[i]:+.2f} std)" for n, i in zip(names, top))
    detail = (f"A classifier separating training from validation inputs, classes weighted equally, reached AUC "
              f"{auc:.2f} (2 * AUC - 1 = {statistic:.2f}, threshold {threshold:.2f}; {sizes[0]:,} and "
              f"{sizes[1]:,} samples). " + (f"The inputs whose means differ most (validation minus training): "
                                            f"{listed}." if flagged else "The two splits' inputs look alike."))
    return _check("feature_shift", started, statistic, threshold, flagged, detail, auc=auc,
                  train_samples=int(sizes[0]), val_samples=int(sizes[1]), classes_counted=counted,
                  top_inputs=[{"input": n, "standardised_difference": float(differences[i])}
                              for n, i in zip(names, top)])


def capacity(trainable_params: int, train_size: int, gaps, shift_flagged: bool,
             threshold: float = CAPACITY_THRESHOLD) -> Check:
    """Does the model fit its training samples better than held-out ones of the same split? The mean over seeds
    of train_eval_acc - tune_acc at the small batch, flagged over `threshold` unless a shift check is flagged
    (then the data already differ and the gap is not read as capacity)."""
    started = time.perf_counter()
    gaps = np.asarray([g for g in gaps if g is not None and np.isfinite(g)], dtype=np.float64)
    per_sample = trainable_params / train_size if train_size else float("nan")
    size = (f"{trainable_params:,} trainable parameters, {per_sample:.1f} per training sample" if train_size
            else f"{trainable_params:,} trainable parameters")
    extra = {"trainable_params": int(trainable_params), "n": len(gaps),
             "params_per_sample": float(per_sample) if train_size else None}
    if len(gaps) == 0:
        return _check("capacity", started, None, threshold, False, f"{size}; the runs held out no tuning slice "
                      "(tune_fraction 0) or no small-batch run completed, so train_eval_acc - tune_acc was not "
                      "measured.", **extra)
    gap = float(gaps.mean())
    detail = f"{size}; train_eval_acc - tune_acc {gap:.3f} at the small batch (n = {len(gaps)} seeds)"
    if gap <= threshold:
        detail += f", within the {threshold:.2f} threshold."
    elif shift_flagged:
        detail += (f", over the {threshold:.2f} threshold but not read as capacity: the training and validation "
                   "data already differ (a shift check is flagged).")
    else:
        detail += f", over the {threshold:.2f} threshold: the model fits samples it does not generalise to."
    return _check("capacity", started, gap, threshold, gap > threshold and not shift_flagged, detail, **extra)
