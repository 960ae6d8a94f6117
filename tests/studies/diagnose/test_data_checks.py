"""The data suspects of "high train_acc, low val_acc" (harness.studies.diagnose.data_checks), each check on data whose answer is
known: a hand table for Cramér's V, a hand sequence for the order statistic, splits drawn from one distribution
or shifted by a known amount for the domain classifier."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness.studies.diagnose import data_checks

FEATURES = 16
SHIFTED = [3, 7, 11]


def _clusters(shares, n, seed, shift=0.0):
    """n samples with class k a `shares[k]` part of them, class k's mean 2 std higher in input k, every input
    offset by `shift` (a number, or one per input)."""
    rng = np.random.default_rng(seed)
    counts = np.round(np.asarray(shares) * n).astype(int)
    y = np.repeat(np.arange(len(counts)), counts)
    x = rng.normal(size=(len(y), FEATURES)) + 2.0 * np.eye(len(counts), FEATURES)[y] + shift
    return x.astype(np.float32), y


BALANCED = [1 / 3, 1 / 3, 1 / 3]


def test_label_shift_balanced_splits_not_flagged():
    check = data_checks.label_shift(np.arange(300) % 3, np.arange(90) % 3, num_classes=3)
    assert check.statistic == pytest.approx(0.0, abs=1e-12)
    assert not check.flagged


def test_label_shift_90_10_training_flagged_names_class_and_tvd():
    y_train = np.repeat([0, 1], [900, 100])
    y_val = np.repeat([0, 1], [500, 500])
    check = data_checks.label_shift(y_train, y_val, num_classes=2, classes=["cat", "dog"])
    assert check.flagged
    assert check.extra["tvd"] == pytest.approx(0.4, abs=1e-9)
    assert check.extra["over_represented"] == "cat"
    assert (check.extra["train_share"], check.extra["val_share"]) == pytest.approx((0.9, 0.5), abs=1e-12)
    assert "class cat is 90.0% of training and 50.0% of validation" in check.detail


def test_label_shift_matches_cramers_v_on_a_hand_table():
    # train [30, 10, 0, 20], validation [10, 30, 0, 20]: class 2 is dropped, every expected count is 20, so
    # chi2 = 4 * 10^2 / 20 = 20 on 2 degrees of freedom (p = exp(-10)), V = sqrt(20 / 120), TVD = 1/3
    y_train = np.repeat([0, 1, 3], [30, 10, 20])
    y_val = np.repeat([0, 1, 3], [10, 30, 20])
    check = data_checks.label_shift(y_train, y_val, num_classes=4)
    assert check.statistic == pytest.approx(np.sqrt(20 / 120), rel=1e-12)
    assert check.extra["p_value"] == pytest.approx(np.exp(-10), rel=1e-9)
    assert check.extra["tvd"] == pytest.approx(1 / 3, abs=1e-9)
    assert check.extra["over_represented"] == "0"
    assert check.flagged


def test_label_shift_one_class_is_zero():
    check = data_checks.label_shift(np.full(10, 2), np.full(5, 2), num_classes=3)
    assert check.statistic == 0.0 and not check.flagged


def test_order_class_sorted_flagged():
    check = data_checks.order(np.repeat(np.arange(10), 100), shuffle=False)
    assert check.statistic == pytest.approx((990 / 999 - 0.1) / 0.9, rel=1e-12)
    assert check.flagged


def test_order_random_permutation_not_flagged():
    y = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 100))
    check = data_checks.order(y, shuffle=True)
    assert abs(check.statistic) < 0.05 and not check.flagged
    assert "drawn anew every epoch" in check.detail


def test_order_hand_example():
    check = data_checks.order(np.array([0, 0, 1, 1]), shuffle=False)
    assert (check.extra["f"], check.extra["e"]) == pytest.approx((2 / 3, 0.5), abs=1e-12)
    assert check.statistic == pytest.approx(1 / 3, abs=1e-12)
    assert data_checks.order(np.zeros(5, int), shuffle=False).statistic == 0.0


def test_feature_shift_same_distribution_not_flagged():
    check = data_checks.feature_shift(*_clusters(BALANCED, 600, 0), *_clusters(BALANCED, 300, 1))
    assert check.statistic < 0.1 and not check.flagged


def test_feature_shift_one_std_everywhere_flagged():
    check = data_checks.feature_shift(*_clusters(BALANCED, 600, 0), *_clusters(BALANCED, 300, 1, shift=1.0))
    assert check.statistic > 0.9 and check.flagged


def test_feature_shift_sees_a_change_of_scale_that_moves_no_mean():
    """Validation never normalised (x255) around a mean of 0: no input's mean moves, so a linear classifier on the
    inputs alone cannot tell the splits apart; each sample's spread can."""
    x_val, y_val = _clusters(BALANCED, 300, 1)
    x_val = (x_val - x_val.mean(axis=0)) * 255.0
    x_train, y_train = _clusters(BALANCED, 600, 0)
    check = data_checks.feature_shift(x_train - x_train.mean(axis=0), y_train, x_val, y_val)
    assert check.flagged and check.statistic > 0.9
    assert check.extra["top_inputs"][0]["input"] in ("sample std", "sample min", "sample max")


def test_feature_shift_names_the_shifted_inputs():
    shift = np.zeros(FEATURES)
    shift[SHIFTED] = 1.0
    names = [f"pixel {i}" for i in range(FEATURES)]
    check = data_checks.feature_shift(*_clusters(BALANCED, 600, 0), *_clusters(BALANCED, 300, 1, shift=shift),
                                   feature_names=names)
    assert check.flagged
    assert {top["input"] for top in check.extra["top_inputs"]} == {names[i] for i in SHIFTED}
    assert all(0.7 < top["standardised_difference"] < 1.3 for top in check.extra["top_inputs"])


def test_feature_shift_label_shift_alone_not_flagged():
    # training 90% class 0, validation balanced, the same inputs within every class: unweighted, a classifier
    # tells the splits apart by the class the inputs look like (statistic ~0.5); weighted, it cannot
    check = data_checks.feature_shift(*_clusters([0.9, 0.05, 0.05], 1000, 0), *_clusters(BALANCED, 300, 1))
    assert check.statistic < 0.1 and not check.flagged


def test_feature_shift_ignores_row_order():
    x_train, y_train = _clusters(BALANCED, 600, 0)
    x_val, y_val = _clusters(BALANCED, 300, 1, shift=0.2)
    first = data_checks.feature_shift(x_train, y_train, x_val, y_val, max_samples=400)
    rng = np.random.default_rng(5)
    a, b = rng.permutation(len(y_train)), rng.permutation(len(y_val))
    again = data_checks.feature_shift(x_train[a], y_train[a], x_val[b], y_val[b], max_samples=400)
    assert again.statistic == pytest.approx(first.statistic, abs=1e-9)
    assert again.extra["top_inputs"] == first.extra["top_inputs"]


def test_feature_shift_subsamples_to_max_samples():
    x_train, y_train = _clusters(BALANCED, 1500, 0)
    x_val, y_val = _clusters(BALANCED, 300, 1)
    images = (x_train.reshape(-1, 4, 4), x_val.reshape(-1, 4, 4))  # any sample shape is flattened
    check = data_checks.feature_shift(images[0], y_train, images[1], y_val, max_samples=500)
    assert (check.extra["train_samples"], check.extra["val_samples"]) == (500, 300)
    assert "500 and 300 samples" in check.detail


def test_capacity_flagged_over_threshold():
    check = data_checks.capacity(52_138, 3600, [0.2, 0.25, 0.15], shift_flagged=False)
    assert check.statistic == pytest.approx(0.2) and check.flagged
    assert "52,138 trainable parameters, 14.5 per training sample" in check.detail
    assert check.extra["n"] == 3
    assert not data_checks.capacity(52_138, 3600, [0.03, 0.02], shift_flagged=False).flagged


def test_capacity_not_read_as_capacity_under_a_shift():
    check = data_checks.capacity(52_138, 3600, [0.2, 0.25, 0.15], shift_flagged=True)
    assert not check.flagged and "not read as capacity" in check.detail


def test_capacity_without_gaps_unmeasured():
    check = data_checks.capacity(52_138, 3600, [], shift_flagged=False)
    assert check.statistic is None and not check.flagged and "no tuning slice" in check.detail


@pytest.mark.parametrize("check", [
    lambda: data_checks.label_shift(np.repeat([0, 1], [90, 10]), np.repeat([0, 1], [50, 50]), 2),
    lambda: data_checks.label_shift(np.zeros(4, int), np.zeros(3, int), 2),
    lambda: data_checks.order(np.array([0, 0, 1, 1]), shuffle=True),
    lambda: data_checks.order(np.array([1]), shuffle=False),
    lambda: data_checks.feature_shift(*_clusters(BALANCED, 150, 0), *_clusters(BALANCED, 60, 1)),
    lambda: data_checks.feature_shift(*_clusters(BALANCED, 6, 0), *_clusters(BALANCED, 3, 1)),
    lambda: data_checks.capacity(1000, 100, [0.3], shift_flagged=False),
    lambda: data_checks.capacity(1000, 0, [], shift_flagged=True),
], ids=["label_shift", "label_shift-one-class", "order", "order-one-sample", "feature_shift",
        "feature_shift-too-few", "capacity", "capacity-unmeasured"])
def test_as_dict_is_json(check):
    result = check()
    row = json.loads(json.dumps(result.as_dict(), allow_nan=False))
    assert {"name", "statistic", "threshold", "flagged", "detail", "seconds"} <= set(row)
    assert row["name"] in {"label_shift", "order", "feature_shift", "capacity"}
    assert (row["statistic"] is None) <= (row["flagged"] is False)


def test_a_sweeps_main_process_reads_the_diagnosis_without_importing_scikit_learn():
    """Every command's main process reads the diagnosis (the studies' registry, for the report); scikit-learn,
    0.2 s of its start-up, loads only where a diagnosis run fits the feature check's classifier."""
    import subprocess
    import sys

    check = ("import sys, harness.launch.cli, harness.report.html, harness.studies.diagnose.reading; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn'}))")
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", (proc.stdout, proc.stderr[-2000:])
