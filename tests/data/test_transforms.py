import numpy as np
import pytest

from harness.data import transforms


def labelled(counts, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.repeat(np.arange(len(counts)), counts))
    x = np.arange(len(y), dtype=np.float32)[:, None] * 10 + y[:, None]  # each row remembers its label
    return x, y


def test_sort_by_class_gives_one_class_per_batch_in_a_fixed_order():
    x, y = labelled([40] * 10)
    xs, ys = transforms.sort_by_class(x, y)
    assert np.all(np.diff(ys) >= 0)
    batches = ys.reshape(-1, 8)
    assert all(len(set(b)) == 1 for b in batches)
    assert np.array_equal(xs[:, 0] % 10, ys)  # rows moved with their labels
    again, _ = transforms.sort_by_class(x, y)
    assert np.array_equal(xs, again)


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.9, 0.95, 0.99])
def test_imbalance_makes_the_dominant_class_exactly_that_fraction(fraction):
    x, y = labelled([400] * 10)
    xi, yi = transforms.make_imbalanced(x, y, fraction, np.random.default_rng(1))
    counts = np.bincount(yi, minlength=10)
    assert abs(counts[0] / len(yi) - fraction) <= 1 / len(yi)
    assert counts[0] == 400  # the dominant class is kept whole
    assert counts[1:].max() - counts[1:].min() <= 1  # the others are subsampled evenly
    assert np.array_equal(xi[:, 0] % 10, yi)


def test_imbalance_below_the_natural_fraction_subsamples_the_dominant_class():
    keep = transforms.imbalanced_counts(np.array([400, 300, 350]), 0.1)
    assert list(keep[1:]) == [300, 300]
    assert abs(keep[0] / keep.sum() - 0.1) <= 1 / keep.sum()


def test_apply_orders_imbalance_then_sort_and_leaves_its_inputs_alone():
    x, y = labelled([50] * 10)
    x_copy, y_copy = x.copy(), y.copy()
    xt, yt = transforms.apply(x, y, imbalance=0.5, shuffle=False, seed=3)
    assert np.all(np.diff(yt) >= 0) and np.mean(yt == 0) == pytest.approx(0.5, abs=0.02)
    assert np.array_equal(x, x_copy) and np.array_equal(y, y_copy)
    same_x, same_y = transforms.apply(x, y, imbalance=0.0, shuffle=True, seed=3)
    assert same_x is x and same_y is y


def test_train_fraction_keeps_exactly_that_share_of_every_class():
    x, y = labelled([400, 300, 200])
    xs, ys = transforms.take_fraction(x, y, 0.1, np.random.default_rng(0))
    assert list(np.bincount(ys)) == [40, 30, 20]
    assert np.array_equal(xs[:, 0] % 10, ys)


def test_preprocess_mismatch_really_differs_and_none_is_untouched():
    rng = np.random.default_rng(0)
    x_train, x_val = rng.normal(size=(100, 40, 1)).astype(np.float32), rng.normal(size=(50, 40, 1)).astype(np.float32)
    assert transforms.mismatch_validation(x_val, x_train, "none") is x_val
    assert np.allclose(transforms.mismatch_validation(x_val, x_train, "unscaled"), 255 * x_val)
    shifted = transforms.mismatch_validation(x_val, x_train, "shifted")
    assert np.allclose(shifted - x_val, x_train.std())


def test_an_unknown_mismatch_is_refused():
    x = np.zeros((4, 40, 1), np.float32)
    with pytest.raises(ValueError, match="unknown preprocess mismatch 'rotated'"):
        transforms.mismatch_validation(x, x, "rotated")


@pytest.mark.parametrize("fraction,imbalance", [(1.0, 0.9), (0.3, 0.0), (0.3, 0.5), (0.5, 0.05)])
def test_the_count_arithmetic_predicts_what_apply_keeps(fraction, imbalance):
    """Config validation sizes the training set from the counts alone; apply must keep exactly those."""
    counts = [53, 47, 61, 40, 58]
    x, y = labelled(counts, seed=4)
    expected = transforms.fraction_counts(np.array(counts), fraction) if fraction < 1.0 else np.array(counts)
    if imbalance:
        expected = transforms.imbalanced_counts(expected, imbalance)
    _, kept = transforms.apply(x, y, imbalance=imbalance, shuffle=True, seed=1, train_fraction=fraction)
    assert list(np.bincount(kept, minlength=len(counts))) == list(expected)
