"""+study=diagnose end to end, shrunken, on a user's own problem: an .npz and a model of theirs with batch norm,
in fresh processes as a user runs it."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_harness
from tests.helpers.user_data import write_digits, write_npz

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
    assert list(plan["arms"].values()) == ["as_is", "as_is", "steps", "lr", "steps_lr"] * 2  # Shapley's
    assert "model=custom" in plan["left_out"]["ghost_batch_norm"]
    assert (tmp_path / "calls.txt").read_text().split() == ["12"] * 10  # no arm key reached the user's function
    environment = json.loads((sweep / "0" / "run.json").read_text())["environment"]  # their layer, found
    assert environment["batch_norm"] == {"layers": 1, "momenta": [0.99]} and environment["batchnorm"] == \
        "single replica"
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


def test_mobilenetv2_whose_statistics_lag_at_both_sizes_is_told_it_never_learned_before_the_split(tmp_path):
    """The case a user met: a keras.applications MobileNetV2 (batch norm at momentum 0.999) for an epoch on a small
    image folder (scikit-learn's digits at 32 x 32), batch 8 against 64. Every run validates at chance with the
    moving statistics; the diagnosis says that first, with each size's bn_initial_weight and its accuracy with the
    statistics recomputed, then splits the difference (its parts still add up). One seed and the ladder (4 runs):
    each run traces MobileNetV2's training step once (harness.run.train), most of its ~20 s here."""
    write_digits(tmp_path / "digits", per_class=20)
    sweep = tmp_path / "sweeps" / "mobilenet"
    proc = run_harness("+study=diagnose", "dataset=images", f"dataset.path={tmp_path / 'digits'}", "model=application",
                       "model.name=MobileNetV2", "+model.alpha=0.35", "batch_size=8,64", "epochs=1", "seed=0",
                       "probes=false", "diagnose.attribution=ladder", "hydra.launcher.n_jobs=2",
                       f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads((sweep / "diagnosis.json").read_text())
    levels = {row["arm"]: row for row in found["arm_values"]}
    assert levels["b"]["val_acc"] < 0.2 and levels["B"]["val_acc"] < 0.2  # chance is 0.10, its margin 0.10
    for arm, job in (("b", "0"), ("B", "1")):  # the as-is runs: MobileNetV2's own momentum, read back from them
        steps = int(pd.read_parquet(sweep / job / "metrics.parquet")["step"].iloc[-1])
        assert levels[arm]["bn_initial_weight"] == pytest.approx(0.999 ** steps, rel=1e-6)
        assert levels[arm]["val_acc_precise_bn"] is not None
    assert found["level"].startswith(f"Neither batch size learned to validate: val_acc {levels['b']['val_acc']:.2f} "
                                     f"at batch 8 and {levels['B']['val_acc']:.2f} at batch 64, chance 0.10.")
    assert found["headline"].startswith(found["level"] + " The difference between them: of the drop of")
    assert sum(p["value"] for p in found["parts"]) == pytest.approx(found["drop"]["value"], abs=1e-9)
    from tests.helpers import page

    parsed = page.parse(Path(tmp_path / proc.stdout.strip().splitlines()[-1]).read_text())
    assert page.text(parsed.find("h2", id="diagnosis")) == "Diagnosis: batch 64 against batch 8"
    assert found["level"] in page.section(parsed, "diagnosis")


def _results(cwd: Path, sweep: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "harness.results", str(sweep)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
