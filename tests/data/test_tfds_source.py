"""`dataset=tfds` (harness.data.tfds_source): TFDS data read from the local cache, never downloaded during a run.
Offline, a tiny data set prepared by TFDS itself (tests.helpers.tfds_data) or tfds.testing.mock_data stands in for
the cache."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from harness.config.schema import ConfigError
from harness.data import registry as datasets
from harness.data import tfds_source
from harness.data.builtin import DataUnavailable
from harness.launch.cli import main
from harness.report.html import report_path
from tests.conftest import built_once, run_harness
from tests.helpers import tfds_data


@pytest.fixture(scope="session")
def tfds_cache(tmp_path_factory):
    """A TFDS data folder holding `tiny_clusters`, prepared once per test run by tensorflow-datasets itself."""
    def build(folder):
        proc = subprocess.run([sys.executable, "-m", "tests.helpers.tfds_data", str(folder)], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return {}

    return built_once(tmp_path_factory, "tfds", build)[0]


def _tiny(data_dir) -> list[str]:
    return ["dataset=tfds", f"dataset.name={tfds_data.NAME}", f"dataset.data_dir={data_dir}"]


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


def test_a_prepared_tfds_set_is_checked_from_its_files_without_tensorflow(tfds_cache, tmp_path):
    """The command knows a prepared set's sample shape (for the model's checks) from TFDS's JSON files alone."""
    script = ("import sys; from tests.conftest import compose_config; from harness.data import registry; "
              f"cfg = compose_config(*{_tiny(tfds_cache) + ['model=mlp']!r}); "
              "print(registry.input_shape(cfg.data), registry.train_class_counts(cfg.data), "
              "'tensorflow' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["(4,", "4,", "1)", "None", "False"]  # counts need the records: a run checks them


def _edit(folder, name, change):
    path = folder / tfds_data.NAME / "1.0.0" / name
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def _feature(kind, spec):
    def change(features):
        features["featuresDict"]["features"][kind] = spec
        return features
    return lambda folder: _edit(folder, "features.json", change)


def _split_lengths(lengths):
    def change(info):
        info["splits"][1]["shardLengths"] = lengths
        return info
    return lambda folder: _edit(folder, "dataset_info.json", change)


def _unsupervised(folder):
    _edit(folder, "dataset_info.json", lambda info: {k: v for k, v in info.items() if k != "supervisedKeys"})


def _shard_missing(folder):
    next((folder / tfds_data.NAME / "1.0.0").glob("*-test.tfrecord-*")).unlink()


_TENSOR = "tensorflow_datasets.core.features.tensor_feature.Tensor"
# case -> (what is wrong with the prepared set or the command, what the one line must say)
TFDS_CASES = {
    "split-missing": (lambda folder: ["dataset.val_split_name=validation"],
                      "dataset.val_split_name='validation' is not allowed: a split of"),
    "split-empty": (_split_lengths(["0"]), "dataset.val_split_name='test' is not allowed: a split with examples"),
    "shard-missing": (_shard_missing, "a split whose 1 shard file(s) are all in"),
    "unsupervised": (_unsupervised, "a supervised data set (input, label)"),
    "one-class": (_feature("label", {"classLabel": {"numClasses": "1"}}), "labels of at least two classes; "),
    "one-hot": (_feature("label", {"tensor": {"dtype": "float32", "shape": {"dimensions": ["3"]}}, "pythonClassName":
                _TENSOR}), "labels with one value per sample; label 'label' has shape (3,)"),
    "text-inputs": (_feature("image", {"text": {}, "pythonClassName": "tensorflow_datasets.core.features.text"}),
                    "numeric inputs (an image or a tensor); input 'image' is text"),
    "ragged-inputs": (_feature("image", {"image": {"dtype": "uint8", "shape": {"dimensions": ["-1", "-1", "3"]}}}),
                      "inputs of one fixed shape (a batch stacks them); input 'image' has shape (None, None, 3)"),
}


@pytest.mark.parametrize("case", sorted(TFDS_CASES))
def test_a_wrong_prepared_tfds_set_is_refused_before_anything_runs(case, tfds_cache, tmp_path, capsys, monkeypatch):
    spoil, says = TFDS_CASES[case]
    data = tmp_path / "data"
    shutil.copytree(tfds_cache, data)
    extra = spoil(data) or []
    monkeypatch.chdir(tmp_path)
    assert main([*_tiny(data), *extra, "model=mlp", f"hydra.sweep.dir={tmp_path / 'sweep'}", "-m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("harness: error: dataset") and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no sweep folder, no run file


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
def test_in_process_tfds_sweep_on_a_prepared_set_completes(tfds_cache, tmp_path, monkeypatch):
    """Runs read the prepared set's own TFRecord files (a data set outside TFDS's catalogue, as a user's is)."""
    from hydra.core.global_hydra import GlobalHydra

    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "sw"
    try:
        code = main([*_tiny(tfds_cache), "model=mlp", "hydra/launcher=basic", "batch_size=8,32", "epochs=1",
                     "seed=0", f"hydra.sweep.dir={sweep}", "-m"])
    finally:
        GlobalHydra.instance().clear()
    assert code == 0
    train = tfds_data.SPLITS["train"]
    for job, batch in (("0", 8), ("1", 32)):
        record = json.loads((sweep / job / "run.json").read_text())
        assert record["status"] == "completed" and record["config"]["batch_size"] == batch
        assert record["config"]["dataset"] == tfds_data.NAME and record["config"]["dataset.source"] == "tfds"
        metrics = pd.read_parquet(sweep / job / "metrics.parquet")
        assert metrics["epoch"].tolist() == [1] and metrics["train_size"].tolist() == [train]
        assert metrics["steps_per_epoch"].tolist() == [-(-train // batch)]
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
