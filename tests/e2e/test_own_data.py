"""Your own data and your own model, end to end: real sweeps in fresh processes, as a user runs them, on tiny
generated data (a couple of epochs, batch sizes 8 and 32)."""
import ast
import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.data import sources
from tests.conftest import run_harness
from tests.helpers.user_data import expected_train_size, write_images, write_npz

pytestmark = pytest.mark.slow

USER_MODELS = """
from pathlib import Path

import keras

CALLS = Path(__file__).with_name("calls.txt")


def small(input_shape, num_classes, units=16):
    with CALLS.open("a") as f:  # what the harness called it with, for the test to read
        f.write(f"{tuple(input_shape)} {num_classes} {units}\\n")
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(units, activation="relu")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax")(x))


def wrong(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Flatten()(inputs)
    return keras.Model(inputs, keras.layers.Dense(num_classes + 2, activation="softmax")(x))
"""


def sweep_runs(sweep: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(sweep.glob("*/run.json"))}


def report_of(cwd: Path, proc) -> str:
    page = cwd / proc.stdout.strip().splitlines()[-1]
    assert page.suffix == ".html" and page.is_file(), proc.stdout[-2000:]
    return page.read_text()


def test_image_folder_sweep(tmp_path):
    counts = write_images(tmp_path / "pics", per_class=30, size=(36, 36))
    sweep = tmp_path / "sw"
    proc = run_harness("dataset=images", f"dataset.path={tmp_path / 'pics'}", "batch_size=8,32", "epochs=2", "seed=0",
                       "probes=false", "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sweep_runs(sweep)
    assert sorted(runs) == ["0", "1"]
    n_train = expected_train_size(counts)
    for job, batch in (("0", 8), ("1", 32)):
        record = runs[job]
        assert record["status"] == "completed" and record["epochs_completed"] == 2
        assert record["config"]["batch_size"] == batch and record["config"]["dataset.image_size"] == [32, 32]
        assert record["environment"]["classes"] == sorted(p.name for p in (tmp_path / "pics").iterdir())
        metrics = pd.read_parquet(sweep / job / "metrics.parquet")
        assert metrics["epoch"].tolist() == [1, 2]
        assert set(metrics["num_classes"]) == {3} and set(metrics["train_size"]) == {n_train}
        assert {"val_recall_0", "val_recall_1", "val_recall_2"} <= set(metrics.columns)
    best = pd.read_parquet(sweep / "0" / "metrics.parquet")["val_acc"].iloc[-1]
    assert best > 0.6  # colours are learnable: well above chance 1/3
    html = report_of(tmp_path, proc)
    assert "3 classes: chance accuracy 1/3 = 0.333" in html
    assert "Lowest per-class validation recall" in html and all(name in html for name in ("blue", "green", "red"))


def test_npz_with_string_labels_and_a_table_with_a_custom_model_from_the_working_directory(tmp_path):
    """One sweep over the user's two data sets (their own dataset configs) with their own model (on JAX:
    tests/run/test_experiment.py::test_a_jax_run_process_never_imports_tensorflow)."""
    labels = np.repeat(["wolf", "bear", "fox"], 40)
    write_npz(tmp_path / "animals.npz", labels, features=6)
    rng = np.random.default_rng(1)
    kinds = np.repeat([9, 3, 7], 40)
    table = pd.DataFrame({"f0": kinds + rng.normal(0, 0.3, 120), "f1": rng.normal(0, 1, 120), "kind": kinds})
    table.to_csv(tmp_path / "measures.csv", index=False)
    conf = tmp_path / "conf" / "dataset"
    conf.mkdir(parents=True)
    (conf / "animals.yaml").write_text(
        f"name: npz\npath: {tmp_path / 'animals.npz'}\nval_fraction: 0.2\ndata_seed: 42\n")
    (conf / "measures.yaml").write_text(
        f"name: table\npath: {tmp_path / 'measures.csv'}\nlabel: kind\nval_fraction: 0.25\ndata_seed: 42\n")
    (tmp_path / "usermodels.py").write_text(textwrap.dedent(USER_MODELS))
    sweep = tmp_path / "sw"
    proc = run_harness("--config-dir", "conf", "dataset=animals,measures", "model=custom",
                       "model._target_=usermodels.small", "+model.units=12", "batch_size=8", "epochs=2", "seed=0",
                       "probes=false", "hydra.launcher.n_jobs=1",
                       f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sweep_runs(sweep)
    assert len(runs) == 2 and {r["status"] for r in runs.values()} == {"completed"}
    by_data = {}
    for job, record in runs.items():
        by_data.setdefault(record["config"]["dataset"], []).append(job)
        assert record["config"]["model._target_"] == "usermodels.small" and record["config"]["model.units"] == 12
    assert sorted(by_data) == ["npz", "table"] and all(len(jobs) == 1 for jobs in by_data.values())
    for job in by_data["npz"]:
        assert runs[job]["environment"]["classes"] == ["bear", "fox", "wolf"]
        assert runs[job]["config"]["dataset.path"] == str(tmp_path / "animals.npz")
        metrics = pd.read_parquet(sweep / job / "metrics.parquet")
        assert set(metrics["num_classes"]) == {3} and set(metrics["train_size"]) == {32 * 3}
    (codes,), _ = sources.encode_labels(kinds)
    n_table = len(sources.split_indices(codes, 0.25, 42)[0])
    for job in by_data["table"]:
        assert runs[job]["environment"]["classes"] == ["3", "7", "9"]  # integer labels, sorted by value
        metrics = pd.read_parquet(sweep / job / "metrics.parquet")
        assert set(metrics["train_size"]) == {n_table} and metrics["epoch"].tolist() == [1, 2]
        assert metrics["num_classes"].tolist() == [3, 3] and np.isfinite(metrics["train_loss"]).all()
    # the user's function was called in every run, with the data's shape, its classes and the extra key
    calls = sorted((tmp_path / "calls.txt").read_text().splitlines())
    assert len(calls) == 2 and all(c.endswith(" 3 12") for c in calls)
    shapes = [ast.literal_eval(c.rsplit(" ", 2)[0]) for c in calls]
    assert sorted(int(np.prod(s)) for s in shapes) == [2, 6]  # 2 table columns, 6 npz features
    assert "3 classes: chance accuracy 1/3 = 0.333" in report_of(tmp_path, proc)


def test_a_custom_model_with_the_wrong_output_fails_each_run_and_the_sweep_goes_on(tmp_path):
    write_npz(tmp_path / "d.npz", np.repeat([0, 1, 2, 3], 20))
    (tmp_path / "usermodels.py").write_text(textwrap.dedent(USER_MODELS))
    sweep = tmp_path / "sw"
    proc = run_harness("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}", "model=custom",
                       "model._target_=usermodels.wrong", "batch_size=8,32", "epochs=2", "seed=0",
                       "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "2 run(s) failed" in proc.stderr
    runs = sweep_runs(sweep)
    assert sorted(runs) == ["0", "1"]  # the first failure did not end the sweep
    for record in runs.values():
        assert record["status"] == "failed" and record["epochs_completed"] == 0
        assert record["error"]["type"] == "ValueError"
        message = record["error"]["message"]
        assert "model._target_='usermodels.wrong'" in message and "(None, 6)" in message and "4 classes" in message
    assert "usermodels.wrong" in report_of(tmp_path, proc)


def test_a_keras_application_with_an_extra_argument_trains_on_images(tmp_path):
    """MobileNet at a quarter width (27 batch-norm layers): its statistics are recomputed after the epoch too.
    (MobileNetV2's 52 layers and their momentum are built in-process by tests/run/test_precise_bn.py.)"""
    write_images(tmp_path / "pics", per_class=12, size=(32, 32))
    proc = run_harness("dataset=images", f"dataset.path={tmp_path / 'pics'}", "model=application",
                       "model.name=MobileNet", "+model.alpha=0.25", "batch_size=16", "epochs=1", "probes=false",
                       f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["status"] == "completed" and record["epochs_completed"] == 1
    assert record["config"]["model"] == "MobileNet" and record["config"]["model.source"] == "application"
    assert record["config"]["model.alpha"] == 0.25
    metrics = pd.read_parquet(tmp_path / "run" / "metrics.parquet")
    assert metrics["num_classes"].tolist() == [3] and metrics["global_batch_size"].tolist() == [16]
    assert np.isfinite(metrics["train_loss"]).all()
    steps = int(metrics["step"].iloc[0])
    assert metrics["bn_initial_weight"].tolist() == [pytest.approx(0.99 ** steps)]  # Keras's default momentum
    assert metrics["val_acc_precise_bn"].between(0, 1).all()


def test_a_120_class_npz_run_and_its_report_in_a_real_browser(tmp_path):
    labels = np.repeat([f"species_{k:03d}" for k in range(120)], 6)
    write_npz(tmp_path / "many.npz", labels, features=8)
    sweep = tmp_path / "sw"
    proc = run_harness("dataset=npz", f"dataset.path={tmp_path / 'many.npz'}", "model=mlp", "batch_size=64",
                       "epochs=1", "seed=0", "probes=false", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = sweep_runs(sweep)["0"]
    assert record["status"] == "completed" and len(record["environment"]["classes"]) == 120
    metrics = pd.read_parquet(sweep / "0" / "metrics.parquet")
    assert metrics["num_classes"].tolist() == [120] and metrics["train_size"].tolist() == [600]
    assert sum(c.startswith("val_recall_") for c in metrics.columns) == 120
    page = tmp_path / proc.stdout.strip().splitlines()[-1]
    html = page.read_text()
    assert "120 classes: chance accuracy 1/120 = 0.008" in html

    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chromium

    with chromium(tmp_path / "profile", width=1280) as driver:
        driver.get(page.as_uri())
        body = driver.find_element(By.TAG_NAME, "body").text
        line = next((ln for ln in body.splitlines() if "120 classes: chance accuracy 1/120 = 0.008" in ln), None)
        assert line is not None, body[:3000]
        assert "Lowest per-class validation recall" in line and "species_" in line  # named from run.json
        assert len(line) < 600  # one summary line, not 120 recalls
        images = driver.find_elements(By.TAG_NAME, "img")
        assert images
        sizes = [driver.execute_script("return [arguments[0].complete, arguments[0].naturalWidth, "
                                       "arguments[0].naturalHeight]", img) for img in images]
        assert all(done and w > 0 and h > 0 for done, w, h in sizes), sizes
        fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert not [name for name in fetched if name.startswith("http")]
