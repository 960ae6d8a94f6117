"""+study=diagnose end to end, shrunken, on a user's own problem: an .npz and a model of theirs with batch norm,
in fresh processes as a user runs it."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_harness
from tests.helpers.user_data import write_npz

pytestmark = pytest.mark.slow

USER_MODEL = """
from pathlib import Path

import keras

CALLS = Path(__file__).with_name("calls.txt")


def with_batch_norm(input_shape, num_classes, units=16):
    with CALLS.open("a") as f:  # the keywords the harness called it with, for the test to read
        f.write(f"{units}\\n")
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(units, use_bias=False)(keras.layers.Flatten()(inputs))
    x = keras.layers.Activation("relu")(keras.layers.BatchNormalization()(x))
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax")(x))
"""


def test_a_diagnosis_of_a_users_npz_and_batch_norm_model(tmp_path):
    """Two seeds, batch 8 against 32: the as-is runs, the steps and learning-rate arms (no ghost arm for a model of
    the user's), the data checked once by the first job, diagnosis.json whose parts add up to the drop, the
    report's Diagnosis section, and the parts in `python -m harness.results`."""
    write_npz(tmp_path / "data.npz", np.repeat(["cat", "dog", "owl"], 80), features=6)
    (tmp_path / "mymodels.py").write_text(USER_MODEL)
    sweep = tmp_path / "sweeps" / "diag"
    proc = run_harness("+study=diagnose", "dataset=npz", f"dataset.path={tmp_path / 'data.npz'}", "model=custom",
                       "model._target_=mymodels.with_batch_norm", "+model.units=12", "batch_size=8,32", "epochs=2",
                       "seed=0,1", "probes=false", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", "-m",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((sweep / "sweep.json").read_text())["diagnose"]
    assert list(plan["arms"].values()) == ["as_is", "as_is", "steps", "steps_lr"] * 2
    assert "model=custom" in plan["left_out"]["ghost_batch_norm"]
    assert (tmp_path / "calls.txt").read_text().split() == ["12"] * 8  # no arm key reached the user's function
    assert sorted(p.parent.name for p in sweep.glob("*/data_checks.json")) == ["0"]
    found = json.loads((sweep / "diagnosis.json").read_text())
    assert [p["name"] for p in found["parts"]] == ["stale_statistics", "fewer_updates", "learning_rate", "remains"]
    assert sum(p["value"] for p in found["parts"]) == pytest.approx(found["drop"]["value"], abs=1e-9)
    assert found["seeds"] == [0, 1] and all(p["low"] is not None for p in found["parts"])
    checks = {c["name"]: c for c in found["checks"]}
    assert list(checks) == ["label_shift", "order", "feature_shift", "capacity"]
    assert not checks["label_shift"]["flagged"] and not checks["order"]["flagged"]  # a stratified, shuffled split
    assert checks["capacity"]["statistic"] is not None  # the tuning slice held out of every arm
    from tests.helpers import page

    parsed = page.parse(Path(tmp_path / proc.stdout.strip().splitlines()[-1]).read_text())
    assert found["headline"].split(",")[0] in page.section(parsed, "diagnosis")
    results = _results(tmp_path, sweep)
    # the headline, which may first say what both sizes share (two epochs: statistics that lag at both)
    assert re.search(r"diag diagnosis: (.*The difference between them: of|Of) the drop of", results), results[:800]
    assert "fewer_updates" in results and "steps_lr" in results


def _results(cwd: Path, sweep: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "harness.results", str(sweep)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
