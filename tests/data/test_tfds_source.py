"""`dataset=tfds` (harness.data.tfds_source): TFDS data read from the local cache, never downloaded during a run.
Offline, tfds.testing.mock_data stands in for the cache."""
import json

import numpy as np
import pandas as pd
import pytest

from harness.config.schema import ConfigError
from harness.data import registry as datasets
from harness.data import tfds_source
from harness.data.builtin import DataUnavailable
from harness.report.html import report_path
from tests.conftest import run_harness


def test_a_tfds_name_is_required(compose):
    with pytest.raises(ConfigError, match=r"^dataset.name=None is not allowed: the name of a TFDS data set"):
        compose("dataset=tfds")
    with pytest.raises(ConfigError, match=r"^dataset.train_split_name='' is not allowed"):
        compose("dataset=tfds", "dataset.name=mnist", "dataset.train_split_name=''")
    with pytest.raises(ConfigError, match=r"^dataset.data_dir=3 is not allowed"):
        compose("dataset=tfds", "dataset.name=mnist", "dataset.data_dir=3")


def test_a_tfds_config_validates_without_the_data(compose, tmp_path):
    cfg = compose("dataset=tfds", "dataset.name=mnist", f"dataset.data_dir={tmp_path}", "batch_size=100000")
    assert cfg.data.source == "tfds" and cfg.data.name == "mnist" and cfg.data.data_dir == str(tmp_path)
    assert (cfg.data.train_split_name, cfg.data.val_split_name) == ("train", "test")
    # sizes and shapes are known only once loaded: the run's own planner checks the batch size
    assert datasets.train_class_counts(cfg.data) is None and datasets.input_shape(cfg.data) is None
    assert cfg.data.flat()["dataset.source"] == "tfds"
    assert not any(tmp_path.iterdir())  # nothing downloaded or prepared


def test_mocked_tfds_data_loads_scaled_with_classes(compose):
    import tensorflow_datasets as tfds

    cfg = compose("dataset=tfds", "dataset.name=mnist")
    with tfds.testing.mock_data(num_examples=40):
        arrays = datasets.load(cfg.data)
    assert arrays.x_train.shape == (40, 28, 28, 1) and arrays.x_val.shape == (40, 28, 28, 1)
    assert tuple(arrays.input_shape) == (28, 28, 1) and arrays.x_train.dtype == np.float32
    assert 0.0 <= arrays.x_train.min() and 0.5 < arrays.x_train.max() <= 1.0  # bytes scaled to [0, 1]
    present = sorted(set(arrays.y_train) | set(arrays.y_val))
    assert present == list(range(arrays.num_classes)) and arrays.classes == [str(k) for k in range(arrays.num_classes)]


def test_missing_tfds_data_says_how_to_get_it(tmp_path):
    from harness.data.registry import DataConfig

    cfg = DataConfig(name="mnist", source="tfds", train_split_name="train", val_split_name="test",
                     data_dir=str(tmp_path))
    with pytest.raises(DataUnavailable) as err:
        tfds_source.load(cfg)
    message = str(err.value)
    assert "dataset.name=mnist" in message and str(tmp_path) in message
    assert "tfds.load('mnist')" in message and "internet access" in message
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_in_process_tfds_sweep_with_mock_data_completes(tmp_path, monkeypatch):
    import tensorflow_datasets as tfds
    from hydra.core.global_hydra import GlobalHydra

    from harness.launch import cli

    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "sw"
    try:
        with tfds.testing.mock_data(num_examples=64):
            code = cli.main(["dataset=tfds", "dataset.name=mnist", "model=mlp", "hydra/launcher=basic",
                             "batch_size=8,32", "epochs=1", "seed=0", f"hydra.sweep.dir={sweep}", "-m"])
    finally:
        GlobalHydra.instance().clear()
    assert code == 0
    for job, batch in (("0", 8), ("1", 32)):
        record = json.loads((sweep / job / "run.json").read_text())
        assert record["status"] == "completed" and record["config"]["batch_size"] == batch
        assert record["config"]["dataset"] == "mnist" and record["config"]["dataset.source"] == "tfds"
        metrics = pd.read_parquet(sweep / job / "metrics.parquet")
        assert metrics["epoch"].tolist() == [1] and metrics["train_size"].tolist() == [64]
        assert metrics["steps_per_epoch"].tolist() == [64 // batch]
        assert metrics["num_classes"].iloc[0] == len(record["environment"]["classes"])
    assert report_path(sweep, tmp_path / "reports").is_file()


@pytest.mark.slow
def test_tfds_run_with_an_empty_cache_is_recorded_failed_with_how_to(tmp_path):
    empty = tmp_path / "tfds-empty"
    empty.mkdir()
    proc = run_harness("dataset=tfds", "dataset.name=mnist", f"dataset.data_dir={empty}", "model=mlp", "epochs=1",
                       f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, env={"TFDS_DATA_DIR": str(empty)})
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "1 run(s) failed" in proc.stderr
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["status"] == "failed" and record["epochs_completed"] == 0
    assert record["error"]["type"] == "DataUnavailable"
    message = record["error"]["message"]
    assert str(empty) in message and "tfds.load('mnist')" in message and "internet access" in message
    assert not any(empty.iterdir())  # nothing was downloaded
