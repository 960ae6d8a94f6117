"""The user's own arrays and tables (harness.data.sources): the stratified split, label encoding, and the one-line
errors a user gets for a bad .npz or table, through the real composed config."""
import numpy as np
import pandas as pd
import pytest

from harness.config.schema import ConfigError
from harness.data import registry as datasets
from harness.data import sources
from tests.conftest import assert_largest_batch
from tests.helpers.user_data import write_npz

# ---- split_indices ----

def test_split_is_stratified_disjoint_and_covers_every_sample():
    labels = np.repeat([0, 1, 2, 3], [10, 25, 3, 40])
    train, val = sources.split_indices(labels, 0.2, seed=7)
    assert np.intersect1d(train, val).size == 0
    assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(len(labels)))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(val) > 0)  # sorted, no repeats
    # round(0.2 x n) of every class validates: 2 of 10, 5 of 25, 1 of 3 (0.6 rounds to 1), 8 of 40
    assert np.bincount(labels[val], minlength=4).tolist() == [2, 5, 1, 8]
    assert np.bincount(labels[train], minlength=4).tolist() == [8, 20, 2, 32]


def test_split_keeps_a_training_sample_of_every_class_and_a_single_sample_trains():
    labels = np.array([0, 0, 1, 2, 2, 2])
    train, val = sources.split_indices(labels, 0.9, seed=0)
    assert np.bincount(labels[train], minlength=3).tolist() == [1, 1, 1]  # never a class with nothing to learn
    assert np.bincount(labels[val], minlength=3).tolist() == [1, 0, 2]


def test_split_is_seeded():
    labels = np.repeat(np.arange(5), 20)
    first = sources.split_indices(labels, 0.25, seed=3)
    again = sources.split_indices(labels, 0.25, seed=3)
    other = sources.split_indices(labels, 0.25, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[1], other[1])
    assert len(other[1]) == len(first[1]) == 25  # the seed picks which samples, not how many


# ---- encode_labels ----

def test_string_labels_become_0_to_k_minus_1_in_sorted_order_across_arrays():
    (train, val), classes = sources.encode_labels(np.array(["dog", "cat", "emu", "cat"]), np.array(["emu", "ant"]))
    assert classes == ["ant", "cat", "dog", "emu"]
    assert train.tolist() == [2, 1, 3, 1] and val.tolist() == [3, 0]
    assert train.dtype == np.int64


def test_integer_labels_are_sorted_by_value_not_as_text():
    (y,), classes = sources.encode_labels(np.array([10, 2, 7, 2, 10]))
    assert classes == ["2", "7", "10"]
    assert y.tolist() == [2, 0, 1, 0, 2]


# ---- .npz ----

def test_npz_with_string_labels_loads_split_and_encoded(tmp_path, compose):
    labels = np.repeat(["wolf", "bear", "fox"], 10)
    x = write_npz(tmp_path / "d.npz", labels)
    cfg = compose("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}", "batch_size=8")
    arrays = datasets.load(cfg.data)
    assert arrays.classes == ["bear", "fox", "wolf"] and arrays.num_classes == 3
    (codes,), _ = sources.encode_labels(labels)
    train, val = sources.split_indices(codes, 0.2, 42)
    assert np.array_equal(arrays.y_train, codes[train]) and np.array_equal(arrays.y_val, codes[val])
    # feature vectors (a channel axis may be added for the convnet): the same numbers, row by row
    assert np.array_equal(arrays.x_train.reshape(len(train), -1), x[train])
    assert np.array_equal(arrays.x_val.reshape(len(val), -1), x[val])
    # the shape validation surveyed from the file's header is the shape the run gets
    assert tuple(arrays.input_shape) == arrays.x_train.shape[1:] == datasets.input_shape(cfg.data)
    assert np.prod(arrays.input_shape) == 4
    assert datasets.train_class_counts(cfg.data).tolist() == [8, 8, 8]


def test_npz_with_its_own_validation_arrays_is_not_split(tmp_path, compose):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x_train=rng.normal(size=(12, 5, 5)), y_train=np.repeat([1, 3], 6),
             x_val=rng.normal(size=(4, 5, 5)), y_val=np.array([3, 3, 1, 3]))
    cfg = compose("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}", "batch_size=12")
    arrays = datasets.load(cfg.data)
    assert arrays.classes == ["1", "3"]  # a class only the validation set has is refused (tests/data/test_checks.py)
    assert arrays.y_train.tolist() == [0] * 6 + [1] * 6 and arrays.y_val.tolist() == [1, 1, 0, 1]
    assert arrays.x_train.shape == (12, 5, 5) and arrays.x_val.dtype == np.float32
    assert datasets.input_shape(cfg.data) == (5, 5)
    with pytest.raises(ConfigError, match=r"batch_size=13 .*training-set size 12"):
        compose("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}", "batch_size=13")


def test_npz_path_that_does_not_exist(tmp_path, compose):
    with pytest.raises(ConfigError) as err:
        compose("dataset=npz", f"dataset.path={tmp_path / 'nothing.npz'}")
    assert "dataset.path=" in str(err.value) and "nothing is there" in str(err.value)
    assert "\n" not in str(err.value)


def test_npz_without_the_expected_arrays_lists_what_it_holds(tmp_path, compose):
    np.savez(tmp_path / "d.npz", features=np.zeros((4, 2)), targets=np.arange(4))
    with pytest.raises(ConfigError) as err:
        compose("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}")
    message = str(err.value)
    assert message.startswith("dataset.path=")
    assert "x_train, y_train, x_val, y_val" in message and "it holds features, targets" in message


def test_a_file_that_is_not_an_npz(tmp_path, compose):
    (tmp_path / "d.npz").write_text("x,y\n1,2\n")
    with pytest.raises(ConfigError, match=r"dataset.path=.*not a zip archive"):
        compose("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}")


def test_batch_size_larger_than_the_npz_training_set(tmp_path, compose):
    labels = np.repeat([0, 1, 2], [7, 11, 4])
    write_npz(tmp_path / "d.npz", labels)
    train, _ = sources.split_indices(labels, 0.2, 42)  # dataset.data_seed's default
    n = len(train)
    assert n == 6 + 9 + 3
    assert_largest_batch(compose, n, "dataset=npz", f"dataset.path={tmp_path / 'd.npz'}")


def test_a_120_class_npz_is_surveyed_as_120_classes_without_loading(tmp_path, compose):
    labels = np.repeat([f"c{k:03d}" for k in range(120)], 6)
    write_npz(tmp_path / "d.npz", labels, features=3)
    cfg = compose("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}", "model=mlp", "batch_size=64")
    counts = datasets.train_class_counts(cfg.data)
    assert len(counts) == 120 and counts.tolist() == [5] * 120  # 1 of every 6 validates
    assert np.prod(datasets.input_shape(cfg.data)) == 3


# ---- tables ----

def _table(tmp_path, name="t.csv", **columns):
    path = tmp_path / name
    frame = pd.DataFrame(columns)
    frame.to_parquet(path) if name.endswith(".parquet") else frame.to_csv(path, index=False)
    return path


def test_csv_without_the_label_column_names_the_columns_it_has(tmp_path, compose):
    path = _table(tmp_path, a=[1.0, 2.0], b=[3.0, 4.0], species=["x", "y"])
    with pytest.raises(ConfigError) as err:
        compose("dataset=table", f"dataset.path={path}")  # dataset.label defaults to `label`
    assert str(err.value).startswith("dataset.label='label' is not allowed")
    assert "a, b, species" in str(err.value)


def test_a_non_numeric_feature_column_is_named(tmp_path, compose):
    path = _table(tmp_path, width=[1.0, 2.0, 3.0], colour=["red", "blue", "red"], species=["x", "y", "x"])
    with pytest.raises(ConfigError) as err:
        compose("dataset=table", f"dataset.path={path}", "dataset.label=species")
    assert "'colour'" in str(err.value) and "numeric" in str(err.value)
    assert "width" not in str(err.value).split("'colour'")[1]  # the offending column, not another


def test_a_file_that_is_not_a_table(tmp_path, compose):
    (tmp_path / "t.txt").write_text("a,b\n")
    with pytest.raises(ConfigError, match=r"dataset.path=.*\.csv or \.parquet"):
        compose("dataset=table", f"dataset.path={tmp_path / 't.txt'}")


def test_parquet_table_with_integer_labels_loads_features_and_sorted_classes(tmp_path, compose):
    labels = np.repeat([9, 3, 7], 5)
    path = _table(tmp_path, "t.parquet", f0=np.arange(15.0), f1=np.arange(15.0) * 2, kind=labels)
    cfg = compose("dataset=table", f"dataset.path={path}", "dataset.label=kind", "batch_size=4")
    arrays = datasets.load(cfg.data)
    assert arrays.classes == ["3", "7", "9"]
    (codes,), _ = sources.encode_labels(labels)
    train, val = sources.split_indices(codes, 0.2, 42)
    assert np.array_equal(arrays.y_train, codes[train]) and np.array_equal(arrays.y_val, codes[val])
    features = arrays.x_train.reshape(len(train), -1)
    assert features.shape == (len(train), 2)  # the label column is not a feature
    assert np.array_equal(features[:, 0], np.arange(15.0)[train]) and np.array_equal(features[:, 1], 2 * features[:, 0])
    assert tuple(arrays.input_shape) == arrays.x_train.shape[1:] == datasets.input_shape(cfg.data)
    with pytest.raises(ConfigError, match=f"training-set size {len(train)}"):
        compose("dataset=table", f"dataset.path={path}", "dataset.label=kind", f"batch_size={len(train) + 1}")
