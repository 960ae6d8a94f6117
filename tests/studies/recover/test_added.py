"""+study=recover's added seeds: an undecided verdict prints `python -m harness.resume SWEEP --add-seeds N`, which
runs only b, B as it is and the recipe on the new seeds, in the same folder; the verdict then reads every judging
seed, and the study's own rounds stay as they were."""
import dataclasses
import json

import pandas as pd
import pytest

from harness.assess import sweep as sweep_files
from harness.studies.recover import reading as recovery
from tests.helpers.sweeps import _command_plan, add_seeds, next_round, set_final, study_sweep

COMMAND = ("+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=4", "seed=0,1", "recover.rules=[]",
           "recover.rungs=[]", "recover.guided=0")


def _set_val(sweep, jobs, values: dict[str, list[float]]) -> None:
    """Each job's last val_acc: `values[arm key]` in seed order (the key: "8", "64" for b and B as they are, else the
    arm)."""
    seen: dict[str, int] = {}
    for job in jobs:
        key = job.arm if job.arm != "as_is" else ("8" if "batch_size=8" in job.overrides else "64")
        path = sweep / job.job / "metrics.parquet"
        frame = pd.read_parquet(path)
        frame.loc[frame.index[-1], "val_acc"] = values[key][seen.setdefault(key, 0)]
        seen[key] += 1
        frame.to_parquet(path, index=False)


@pytest.mark.parametrize("budget", [False, True])
def test_an_undecided_verdict_adds_only_b_big_and_the_recipe_on_new_seeds_and_reads_them_all(tmp_path, budget):
    """With the budget (which runs while the verdict is undecided) too: the seeds are added to a study that has
    planned all its rounds, and the resume, which plans its rounds again from the same files, changes none of them:
    the budget is planned from the verdict on the seeds the study judged on (a real resume dropped it, once)."""
    sweep = study_sweep(tmp_path / "s", *COMMAND, f"recover.budget={str(budget).lower()}")
    next_round(sweep, 1)
    judging = next_round(sweep, 2)  # the recipe judged on seeds 2, 3, 4
    recipe = next(job.arm for job in judging if job.arm != "as_is")
    _set_val(sweep, judging, {"8": [0.95, 0.96, 0.955], "64": [0.83, 0.84, 0.835], recipe: [0.945, 0.95, 0.935]})
    found = recovery.recover(sweep_files.read(sweep))
    v = found.verdict
    assert v.kind == "undecided" and found.judged == [2, 3, 4] and v.seeds_needed > 3
    wanted = v.seeds_needed - 3
    assert found.more_seeds == f"python -m harness.resume {sweep} --add-seeds {wanted}"
    assert any(found.more_seeds in note and "the search does not run again" in note for note in found.notes)
    assert any("left the probes out (recover.probes=false)" in note for note in found.notes)
    done = 3
    while later := next_round(sweep, done):  # the budget's rounds, where asked
        done = later[0].round
    assert budget == (done > 3)
    runs_before = sorted(p.name for p in sweep.iterdir() if p.is_dir())

    added = add_seeds(sweep, wanted)
    new = list(range(5, 5 + wanted))
    assert [(job.arm, next(o for o in job.overrides if o.startswith("seed="))) for job in added] == [
        (arm, f"seed={seed}") for seed in new for arm in ("as_is", "as_is", recipe)]
    assert [next(o for o in job.overrides if o.startswith("batch_size=")) for job in added[:3]] == [
        "batch_size=8", "batch_size=64", "batch_size=64"] and all(job.added for job in added)
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == sorted(runs_before + [j.job for j in added])
    # the new seeds decide it: the recipe within the tolerance of b on each
    _set_val(sweep, added, {"8": [0.955] * wanted, "64": [0.835] * wanted, recipe: [0.955] * wanted})
    small_tune = recovery.recover(sweep_files.read(sweep)).small_tune
    for job in added[::3]:  # b as it is on the new seeds, far below on the tuning slice: what the budget aims at,
        set_final(sweep, job.job, tune_acc=0.3)  # b's tune_acc on the seeds the study planned with, stays
    found = recovery.recover(sweep_files.read(sweep))
    assert found.small_tune == small_tune
    assert found.judged == [2, 3, 4, *new] and found.verdict.gap.n == 3 + wanted
    assert found.verdict.kind == "recovered" and found.verdict.shown  # read over all seeds
    assert found.planned_verdict.kind == "undecided" and found.planned_verdict.gap.n == 3  # what plans the budget
    # the resume --add-seeds runs: the command again, whose sweep.json plans the study's rounds anew from the same
    # files (the budget's too, which the added seeds' verdict would not run): the added jobs kept, no round changed
    before = json.loads((sweep / "sweep.json").read_text())["jobs"]
    dataclasses.replace(_command_plan((*COMMAND, f"recover.budget={str(budget).lower()}")), output_dir=sweep).write()
    assert json.loads((sweep / "sweep.json").read_text())["more_rounds"] is True
    for after in range(1, done + 1):
        next_round(sweep, after)
    assert json.loads((sweep / "sweep.json").read_text())["jobs"] == before


def test_seeds_added_and_still_running_hide_no_reading_and_count_once_ended(tmp_path):
    """--add-seeds 1 whose resume was stopped before its runs ended: the page still reads every round of the study,
    its recipe and its verdict on the seeds that judged (a run still to come held round 1 back and hid them all,
    once); once the new seed's runs have ended, the verdict reads it too."""
    sweep = study_sweep(tmp_path / "s", *COMMAND, "recover.budget=false")
    next_round(sweep, 1)
    judging = next_round(sweep, 2)
    recipe = next(job.arm for job in judging if job.arm != "as_is")
    _set_val(sweep, judging, {"8": [0.95, 0.96, 0.955], "64": [0.83, 0.84, 0.835], recipe: [0.945, 0.95, 0.935]})
    assert not next_round(sweep, 3)  # no budget: the study has planned its every round
    before = recovery.recover(sweep_files.read(sweep))
    added = add_seeds(sweep, 1)
    record = sweep / added[-1].job / "run.json"
    finished = json.loads(record.read_text())
    record.write_text(json.dumps({**finished, "status": "running"}))  # the recipe's run on the new seed, cut short
    found = recovery.recover(sweep_files.read(sweep))
    assert (found.rounds, found.recipe, found.judged) == (before.rounds, before.recipe, [2, 3, 4])
    assert found.verdict.kind == before.verdict.kind and found.verdict.gap.n == 3
    record.write_text(json.dumps(finished))
    assert recovery.recover(sweep_files.read(sweep)).judged == [2, 3, 4, 5]
