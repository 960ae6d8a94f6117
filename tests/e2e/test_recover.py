"""+study=recover end to end, shrunken, on a user's own problem: an .npz and a model of theirs, in fresh processes
as a user runs it, stopped in round 2 (the rung's) and run again."""
import json
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_harness
from tests.helpers.runs import record
from tests.helpers.user_data import write_npz

pytestmark = pytest.mark.slow

USER_MODEL = """
import keras


def small(input_shape, num_classes, units=16):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(units, activation="relu", name="hidden")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax", name="out")(x))
"""


def _killed_in_round_two(command: list[str], sweep, cwd) -> None:
    """The command killed (SIGKILL: its run processes die with it) once sweep.json lists round 2, before the
    round's runs can all have ended (a fresh run process starts TensorFlow first)."""
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if (sweep / "sweep.json").exists() and '"round": 2' in (sweep / "sweep.json").read_text():
            proc.kill()
            break
        time.sleep(0.02)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, f"round 2 was never planned (exit {proc.returncode}): {err[-2000:]}"


def test_a_recovery_on_a_users_npz_and_model_killed_in_round_two_resumes_without_running_round_one_again(tmp_path):
    """Two seeds, batch 8 against 32, 2 trials and the linear rule, on a user's npz and model, killed in round 2
    (the rung's: the better of the 2 trials paused at epoch 1 continues from a copy of its paused run) and run
    again: round 1 (the as-is runs, the trials at 32 on seed 0 paused at epoch 1, batch-norm keys left out, the
    rule's lr x 4 and its warm-up, run whole) is not run again, round 2 is planned the same and its run continues
    from epoch 1, round 3 (the guided round, 2 trials) follows, round 4 confirms the best 2 finished trials by the
    runs' own tune_acc at seed 1 and the rule (never the cut trial), round 5 judges the recipe on fresh seeds 2-4
    beside b and B as they are, and the reading follows the rules on the runs' own numbers: the simplest recipe
    within the tolerance on the seeds that chose, the verdict from v(b) - v(recipe) on the seeds that judged; no
    budget round (recover.budget=false: the budget's rounds are planned in tests/launch/test_rounds.py)."""
    write_npz(tmp_path / "data.npz", np.repeat(["cat", "dog", "owl"], 80), features=6)
    (tmp_path / "mymodels.py").write_text(USER_MODEL)
    sweep = tmp_path / "sweeps" / "recover"
    command = ["+study=recover", "dataset=npz", f"dataset.path={tmp_path / 'data.npz'}", "model=custom",
               "model._target_=mymodels.small", "batch_size=8,32", "epochs=2", "seed=0,1", "probes=false",
               "pause_when=always",  # every trial pauses at the rung (cheaper: only where that saves time)
               "recover.trials=2", "recover.confirm=2", "recover.budget=false", "recover.rules=[linear]",
               "recover.guided=2", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", "-m"]
    _killed_in_round_two(command, sweep, tmp_path)
    plan = json.loads((sweep / "sweep.json").read_text())
    round_one = {j["job"]: (sweep / j["job"] / "run.json").read_bytes() for j in plan["jobs"] if j["round"] == 1}
    round_two = [(j["job"], j["overrides"]) for j in plan["jobs"] if j["round"] == 2]
    assert [json.loads(run)["status"] for run in round_one.values()] == ["completed"] * 4 + ["paused"] * 2 + [
        "completed"]  # the Sobol trials paused at the rung, the rule run whole
    left = [job for job, _ in round_two if not (sweep / job / "run.json").exists()
            or record(sweep / job)["status"] != "completed"]
    assert left, "round 2 ended before the command was killed: nothing to resume"

    proc = run_harness(*command[:-1], "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {job: (sweep / job / "run.json").read_bytes() for job in round_one} == round_one  # not run again
    plan = json.loads((sweep / "sweep.json").read_text())
    assert [(j["job"], j["overrides"]) for j in plan["jobs"] if j["round"] == 2] == round_two
    [(rung_job, _)] = round_two
    paused = {arm: job for job, arm in plan["recover"]["arms"].items() if record(sweep / job)["status"] == "paused"}
    continued = record(sweep / rung_job)
    assert continued["status"] == "completed" and continued["resumed_from_epoch"] == 1
    rung_arm = next(j["arm"] for j in plan["jobs"] if j["job"] == rung_job)
    assert any(f"continued from recover/{paused[rung_arm]}, paused after epoch 1" == note
               for note in continued["notes"])
    cut_arm = next(arm for arm in paused if arm != rung_arm)
    arms = plan["recover"]["arms"]
    assert list(arms.values()) == ["as_is"] * 4 + [f"trial_{k}" for k in range(3)]
    assert set(plan["recover"]["left_out"]) == {"bn_momentum", "ghost_batch_size", "precise_bn"}  # built: no BN
    assert plan["recover"]["batch_norm"] == {"layers": 0, "momenta": [], "rho": None, "given": False}
    assert plan["recover"]["trials"][2] == {"lr_factor": 4.0, "warmup_epochs": 0.4}  # linear: x 32/8, E/5 warm-up
    assert record(sweep / "6")["config"]["lr_factor"] == 4.0 and record(sweep / "6")["config"]["warmup_epochs"] == 0.4
    finals = {num: pd.read_parquet(sweep / num / "metrics.parquet").iloc[-1] for num in
              [j["job"] for j in plan["jobs"]]}
    for num, arm in arms.items():
        assert record(sweep / num)["status"] in ("completed", "paused")
        assert record(sweep / num)["config"]["tune_fraction"] == 0.1
    guided = [j for j in plan["jobs"] if j["round"] == 3]
    assert [j["arm"] for j in guided] == ["trial_3", "trial_4"]  # after the Sobol points and the rule
    searched = {**{job: arm for job, arm in arms.items() if arm != cut_arm}, rung_job: rung_arm,
                **{j["job"]: j["arm"] for j in guided}}
    searched = {job: arm for job, arm in searched.items() if job != paused[rung_arm]}  # a trial: its furthest run
    tune = {int(arm.split("_")[1]): float(finals[num]["tune_acc"]) for num, arm in searched.items() if arm != "as_is"}
    ranked = sorted(tune, key=lambda k: (-tune[k], k))
    confirmed = ranked[:2] + ([2] if 2 not in ranked[:2] else [])  # the rule is always confirmed
    assert [j["arm"] for j in plan["jobs"] if j["round"] == 4] == [f"trial_{k}" for k in confirmed]
    found = json.loads((sweep / "recovery.json").read_text())
    cut = int(cut_arm.split("_")[1])
    assert found["best"] == ranked[0] and [t["tune_acc"] for t in found["trials"]] == pytest.approx(
        [None if k == cut else tune[k] for k in range(5)])
    assert found["trials"][cut]["cut_at"] == 1 and found["trials"][cut]["status"] == "paused"
    assert [t["source"] for t in found["trials"]] == ["sobol", "sobol", "rule", "guided", "guided"]
    assert found["trials"][2]["rule"] == "linear" and (sweep / "recover-optuna.log").exists()
    by_arm = {}
    for job in plan["jobs"]:  # the runs that ran to the end (a paused run is its trial at the rung)
        if record(sweep / job["job"])["status"] != "paused":
            by_arm.setdefault(job["arm"] or arms[job["job"]], []).append(finals[job["job"]])
    recipe = found["recipe_trial"]
    mean_tune = {k: np.mean([r["tune_acc"] for r in by_arm[f"trial_{k}"] if r["seed"] in (0, 1)]) for k in confirmed}
    near = [k for k in confirmed if mean_tune[k] >= max(mean_tune.values()) - 0.01]  # recover.tolerance
    keys_set = {k: sum(v is not None for v in t["recipe"].values()) for k, t in enumerate(found["trials"])}
    assert recipe == min(near, key=lambda k: (k != 2, keys_set[k], -mean_tune[k], k))  # a rule, fewer keys, best
    assert found["chose"] == [0, 1] and found["judged"] == [2, 3, 4]
    judging = [(j["arm"], finals[j["job"]]["seed"], finals[j["job"]]["global_batch_size"]) for j in plan["jobs"]
               if j["round"] == 5]
    assert judging == [(arm, seed, size) for seed in (2, 3, 4)
                       for arm, size in (("as_is", 8), ("as_is", 32), (f"trial_{recipe}", 32))]
    small = {r["seed"]: r["val_acc"] for r in by_arm["as_is"] if r["global_batch_size"] == 8}
    gap = np.mean([small[r["seed"]] - r["val_acc"] for r in by_arm[f"trial_{recipe}"] if r["seed"] >= 2])
    assert found["gap"]["value"] == pytest.approx(gap)
    assert (found["verdict"] == "recovered") == (found["gap"]["high"] <= 0.01)
    assert [j for j in plan["jobs"] if j["round"] >= 6] == [] and plan["more_rounds"] is False  # budget=false
    assert found["budget"]["asked"] is False and found["budget"]["lengths"] == []
    assert found["command"].startswith("python -m harness dataset=npz ") and "batch_size=32" in found["command"]
    from tests.helpers import page

    parsed = page.parse((tmp_path / proc.stdout.strip().splitlines()[-1]).read_text())
    assert found["headline"] in page.section(parsed, "recovery")
    results = subprocess.run([sys.executable, "-m", "harness.results", str(sweep)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert results.returncode == 0 and "trial_1" in results.stdout and " round" in results.stdout, results.stderr
