"""+study=recover end to end, shrunken, on a user's own problem: an .npz and a model of theirs, in fresh processes
as a user runs it (round 1: the reference and the search)."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_harness
from tests.helpers.user_data import write_npz

pytestmark = pytest.mark.slow

USER_MODEL = """
import keras


def small(input_shape, num_classes, units=16):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(units, activation="relu", name="hidden")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax", name="out")(x))
"""


def test_a_search_on_a_users_npz_and_model_ranks_its_trials_and_gives_the_recipe_as_a_command(tmp_path):
    """Two seeds, batch 8 against 32, 4 trials: the as-is runs, the trials at 32 on seed 0 (each a recipe of the
    space, batch-norm keys left out for a model of the user's), recovery.json whose best trial has the best
    tune_acc of the runs' own files, the report's section, and each run's arm in `python -m harness.results`."""
    write_npz(tmp_path / "data.npz", np.repeat(["cat", "dog", "owl"], 80), features=6)
    (tmp_path / "mymodels.py").write_text(USER_MODEL)
    sweep = tmp_path / "sweeps" / "recover"
    proc = run_harness("+study=recover", "dataset=npz", f"dataset.path={tmp_path / 'data.npz'}", "model=custom",
                       "model._target_=mymodels.small", "batch_size=8,32", "epochs=2", "seed=0,1", "probes=false",
                       "recover.trials=4", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((sweep / "sweep.json").read_text())["recover"]
    assert list(plan["arms"].values()) == ["as_is"] * 4 + [f"trial_{k}" for k in range(4)]
    assert set(plan["left_out"]) == {"bn_momentum", "ghost_batch_size"}
    found = json.loads((sweep / "recovery.json").read_text())
    tune = {}
    for num, arm in plan["arms"].items():
        record = json.loads((sweep / num / "run.json").read_text())
        assert record["status"] == "completed" and record["config"]["tune_fraction"] == 0.1
        if arm != "as_is":
            tune[int(arm.split("_")[1])] = float(pd.read_parquet(sweep / num / "metrics.parquet")["tune_acc"].iloc[-1])
            assert record["config"]["batch_size"] == 32 and record["config"]["seed"] == 0
    assert found["best"] == max(tune, key=lambda k: (tune[k], -k))
    assert [t["tune_acc"] for t in found["trials"]] == pytest.approx([tune[k] for k in range(4)])
    assert found["command"].startswith("python -m harness dataset=npz ") and "batch_size=32" in found["command"]
    from tests.helpers import page

    parsed = page.parse((tmp_path / proc.stdout.strip().splitlines()[-1]).read_text())
    assert found["headline"] in page.section(parsed, "recovery")
    results = subprocess.run([sys.executable, "-m", "harness.results", str(sweep)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert results.returncode == 0 and "trial_3" in results.stdout, results.stderr
