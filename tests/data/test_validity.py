"""A user's wrong data never trains (harness.data.validity): each mistake people make when they export their own
arrays or tables is refused by the command, exit 2, one line naming the file, the array or column, what was
found and what is allowed, and nothing written. The run path calls the same checks (registry.load)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from harness.data import registry as datasets
from harness.data import validity
from harness.fields import ConfigError
from harness.launch.cli import main
from tests.conftest import TINY, run_harness


def _clusters(n, features=20, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    return (rng.normal(size=(n, features)) + y[:, None]).astype(np.float32), y


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return ["dataset=npz", f"dataset.path={path}"]


def _table(path, x, y):
    frame = pd.DataFrame(x, columns=[f"f{k}" for k in range(x.shape[1])])
    frame["label"] = y
    frame.to_csv(path, index=False)
    return ["dataset=table", f"dataset.path={path}", "dataset.label=label"]


def _nan(x):
    x = x.copy()
    x[17, 3] = np.nan
    return x


def _inf(x):
    x = x.copy()
    x[5, 0] = np.inf
    return x


x, y = _clusters(200)
xv, yv = _clusters(60, seed=1)
# case -> (how the user's file is written, what the one line must say)
CASES = {
    "npz-misaligned": (lambda p: _npz(p / "d.npz", x=x, y=y[:150]), "x and y of the same length (one label per "
                       "sample); x has 200 samples, y 150"),
    "npz-nan": (lambda p: _npz(p / "d.npz", x=_nan(x), y=y), "finite input values; x has 1 NaN and 0 infinite "
                "value(s), the first in sample 17"),
    "npz-inf": (lambda p: _npz(p / "d.npz", x=_inf(x), y=y), "x has 0 NaN and 1 infinite value(s), the first in "
                "sample 5"),
    "npz-one-class": (lambda p: _npz(p / "d.npz", x=x, y=np.zeros(200, int)), "training labels of at least two "
                      "classes; every training label is 0"),
    "npz-val-only-class": (lambda p: _npz(p / "d.npz", x_train=x, y_train=y, x_val=xv, y_val=np.where(yv == 2, 7, yv)),
                           "validation classes that training also has; class 7 is in 20 validation sample(s) and no "
                           "training sample"),
    "npz-no-validation": (lambda p: _npz(p / "d.npz", x_train=x, y_train=y, x_val=xv[:0], y_val=yv[:0]),
                          "a validation split of at least one sample (every result is a validation accuracy); the "
                          "validation split is empty"),
    "npz-shapes": (lambda p: _npz(p / "d.npz", x_train=x, y_train=y, x_val=xv[:, :10], y_val=yv),
                   "training and validation samples of one shape; x_train's are (20, 1), x_val's (10, 1)"),
    "npz-one-hot": (lambda p: _npz(p / "d.npz", x=x, y=np.eye(3)[y]), "labels with one value per sample; y has "
                    "shape (200, 3); one-hot labels? use y.argmax(axis=1)"),
    "npz-fractional": (lambda p: _npz(p / "d.npz", x=x, y=y + 0.5), "integer, string or whole-number labels; y has "
                       "200 fractional value(s), e.g. 0.5 in sample 0"),
    "table-inf": (lambda p: _table(p / "t.csv", _inf(x), y), "a table of finite values; column 'f0' has 1 "
                  "infinite value(s)"),
    "table-one-class": (lambda p: _table(p / "t.csv", x, np.ones(200, int)), "training labels of at least two "
                        "classes; every training label is 1"),
    "table-fractional": (lambda p: _table(p / "t.csv", x, y * 0.25), "integer, string or whole-number labels; "
                         "column 'label' has"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_data_is_refused_before_anything_runs(case, tmp_path, capsys, monkeypatch):
    write, says = CASES[case]
    data = tmp_path / "data"
    data.mkdir()
    overrides = write(data)
    monkeypatch.chdir(tmp_path)
    assert main([*overrides, "model=mlp", "batch_size=8", f"hydra.sweep.dir={tmp_path / 'sweep'}", "-m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("harness: error: dataset.") and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no sweep folder, no run file


def test_whole_number_float_labels_are_integers_and_a_label_column_is_flattened(tmp_path):
    assert validity.label_values(np.array([0.0, 2.0, 1.0]), "k", "w", "y").dtype == np.int64
    assert validity.label_values(np.array([[1], [0]]), "k", "w", "y").tolist() == [1, 0]
    with pytest.raises(ConfigError, match=r"finite labels; y has 1 NaN or infinite value\(s\), the first in sample 1"):
        validity.label_values(np.array([0.0, np.nan]), "k", "w", "y")


def test_the_run_path_checks_too(tmp_path, compose):
    """A run started without the command (a worker, the launcher) loads through registry.load, which checks."""
    _npz(tmp_path / "d.npz", x=x, y=y)
    cfg = compose("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}", "model=mlp", "batch_size=8")
    np.savez(tmp_path / "d.npz", x=_nan(x), y=y)  # the file changed after the command checked it
    datasets._survey.cache_clear()
    with pytest.raises(ConfigError, match="x has 1 NaN"):
        datasets.load(cfg.data)


def test_the_finite_check_reads_a_large_array_in_chunks(monkeypatch):
    monkeypatch.setattr(validity, "CHUNK", 7)
    big = np.ones((50, 3), np.float32)
    big[40, 2] = -np.inf
    with pytest.raises(ConfigError, match="the first in sample 40"):
        validity.finite(big, "k", "w", "x")
    assert validity.finite(np.full((4, 4), -3.0), "k", "w", "x") == 3.0


@pytest.mark.slow  # a real run: the warning, run.json and the report
def test_huge_features_train_with_a_warning_recorded_in_run_json_and_the_report(tmp_path):
    _npz(tmp_path / "d.npz", x=x * 1e30, y=y)
    done = run_harness("dataset=npz", f"dataset.path={tmp_path / 'd.npz'}", "model=mlp", "batch_size=32",
                       *TINY[1:], "hydra.sweep.dir=sweep", "-m", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr[-3000:]  # it may diverge; a diverged run is a result
    warning = [line for line in done.stderr.splitlines() if line.startswith("harness: warning:")]
    assert len(warning) == 1 and "the inputs' largest magnitude is" in warning[0] and "d.npz" in warning[0]
    record = json.loads((tmp_path / "sweep" / "0" / "run.json").read_text())
    assert "over 1e+06" in record["inputs"]
    report = (tmp_path / done.stdout.strip().splitlines()[-1]).read_text()
    assert "Inputs: dataset.path=" in report and "largest magnitude" in report
