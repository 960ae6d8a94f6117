"""+study=recover's round 1 read (harness.studies.recover.reading) on constructed sweeps: the jobs and configs the real
command plans, made-up accuracies, the trials' tune_acc set by the test."""
import json

import pandas as pd
import pytest

from harness.assess import sweep as sweep_files
from harness.report import html
from harness.studies.recover import reading as recovery
from harness.studies.registry import assess
from tests.helpers import page
from tests.helpers.sweeps import study_sweep

COMMAND = ("+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=4", "seed=0,1", "recover.rules=[]",
           "recover.guided=0", "recover.rungs=[]")


def _set_final(sweep, arm: str, **values) -> None:
    """Overwrite the last epoch's columns of the run of `arm`."""
    arms = json.loads((sweep / "sweep.json").read_text())["recover"]["arms"]
    job = next(num for num, name in arms.items() if name == arm)
    path = sweep / job / "metrics.parquet"
    frame = pd.read_parquet(path)
    for column, value in values.items():
        frame.loc[frame.index[-1], column] = value
    frame.to_parquet(path, index=False)


def test_the_trials_are_ranked_on_the_tuning_slice_never_on_validation(tmp_path):
    """Trial 2 has the best tune_acc and the worst val_acc, trial 0 the reverse: the ranking follows tune_acc. Were
    the selection to read validation, trial 0 would come first."""
    sweep = study_sweep(tmp_path / "s", *COMMAND)
    for arm, tune, val in (("trial_0", 0.70, 0.99), ("trial_1", 0.80, 0.60), ("trial_2", 0.95, 0.10),
                           ("trial_3", 0.85, 0.50)):
        _set_final(sweep, arm, tune_acc=tune, val_acc=val)
    r = recovery.recover(sweep_files.read(sweep))
    assert [t.number for t in r.ranked()] == [2, 3, 1, 0] and r.best == 2
    assert set(recovery.selection(sweep_files.read(sweep).epochs).columns) <= {
        "run_id", "global_batch_size", "peak_lr", "seed", "status", "tune_acc", "tune_loss", "job", "epoch"}
    plan = json.loads((sweep / "sweep.json").read_text())["recover"]
    assert r.trials[2].recipe == plan["trials"][2] and r.trials[2].tune_acc == pytest.approx(0.95)
    assert r.headline.startswith("The search: of 4 recipes at batch 64 within 2 epochs (seed 0), the best "
                                 "on the tuning slice reached tune_acc 0.950")
    assert "no verdict on recovery" in r.headline  # nothing confirmed yet: nothing claimed
    assert r.command.startswith("python -m harness batch_size=64 epochs=2 ") and "seed=" not in r.command
    assert f"lr_factor={plan['trials'][2]['lr_factor']}" in r.command


def test_the_drop_is_paired_over_seeds_and_the_report_and_recovery_json_hold_the_search(tmp_path):
    sweep = study_sweep(tmp_path / "s", *COMMAND)
    a = assess(sweep)
    [verdict] = a.batch_verdicts
    assert verdict.subject == "as is" and verdict.batch_sizes == [8, 64]  # the trials are not in the verdict
    r = a.reading
    finals = sweep_files.read(sweep).epochs.sort_values("epoch").groupby("run_id").tail(1)
    as_is = finals[finals["job"].isin(["0", "1", "2", "3"])].pivot_table(index="seed", columns="global_batch_size",
                                                                          values="val_acc")
    assert r.drop.value == pytest.approx((as_is[8] - as_is[64]).mean()) and r.drop.n == 2
    html.write_report(sweep, tmp_path / "reports")
    written = json.loads((sweep / "recovery.json").read_text())
    assert written["best"] == r.best and [t["trial"] for t in written["trials"]] == [0, 1, 2, 3]
    assert written["rounds"] == 1 and written["verdict"] is None and written["command"] == r.command
    parsed = page.parse((tmp_path / "reports" / "latest.html").read_text())
    section = page.section(parsed, "recovery")
    assert r.headline in section and "plays no part in the ranking" in section


def test_other_sweeps_have_no_recovery(tmp_path):
    assert recovery.recover(sweep_files.read(study_sweep(tmp_path / "s", "+study=smoke"))) is None


def test_the_knob_that_decides_tune_acc_is_the_most_important_and_noise_says_nothing():
    """16 trials whose tune_acc follows log10(lr_factor) alone: lr_factor comes first by far, the forest explains
    tune_acc (out-of-bag R² high); tune_acc of pure noise: R² at or below 0, and the sentence says the importances
    say nothing."""
    import numpy as np

    from harness.studies.recover.importance import importances

    rng = np.random.default_rng(0)
    recipes = [{"lr_factor": float(10 ** rng.uniform(-0.6, 1.5)), "momentum": float(1 - 10 ** rng.uniform(-2, -0.7)),
                "lr_schedule": ["constant", "cosine"][i % 2], "optimizer": [None, "adamw", "lamb"][i % 3]}
               for i in range(16)]
    found = importances(recipes, [0.5 + 0.2 * np.log10(r["lr_factor"]) for r in recipes])
    assert found.keys[0].key == "lr_factor" and found.keys[0].mean > 10 * max(k.mean for k in found.keys[1:])
    assert found.r2_oob > 0.5 and "rough" in found.sentence()
    noise = importances(recipes, list(rng.normal(0.5, 0.05, 16)))
    assert noise.r2_oob <= 0 and "say nothing" in noise.sentence()
    assert importances(recipes[:3], [0.1, 0.2, 0.3]) is None  # too few trials to fit anything



def test_the_permutations_are_scored_on_the_forests_own_predictions_bit_for_bit():
    """The importances score each permutation on the forest's trees summed as RandomForestRegressor.predict sums
    them (without its per-tree checks): equal bit for bit on inputs the forest never saw, and on permuted ones."""
    import numpy as np
    from sklearn.ensemble import RandomForestRegressor

    from harness.studies.recover.importance import TREES, _trees

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(16, 5)), rng.normal(size=16)
    forest = RandomForestRegressor(n_estimators=TREES, min_samples_leaf=2, random_state=0, n_jobs=1).fit(x, y)
    for new in (rng.normal(size=(16, 5)), x[rng.permutation(16)], rng.normal(size=(40, 5)) * 1e3):
        assert np.array_equal(_trees(forest).predict(new), forest.predict(new))
    assert _trees(forest).score(x, y) == forest.score(x, y)

def test_after_round_two_the_section_shows_the_verdict_its_table_and_the_figures(tmp_path):
    from tests.helpers.sweeps import next_round

    sweep = study_sweep(tmp_path / "s", "+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=8",
                        "seed=0,1", "recover.budget=false", "recover.guided=0")
    next_round(sweep, 1)  # the rung: the better half of the trials continue
    next_round(sweep, 2)
    next_round(sweep, 3)  # the recipe judged on seeds 2, 3, 4
    a = assess(sweep)
    assert a.reading.verdict is not None and a.reading.importance is not None
    html.write_report(sweep, tmp_path / "reports")
    parsed = page.parse((tmp_path / "reports" / "latest.html").read_text())
    section = page.section(parsed, "recovery")
    assert a.reading.headline in section and "share of the drop recovered" in section
    for title in ("val_acc by epoch: as they are, and batch B with the recipe",
                  "The search: each trial's tune_acc against its peak learning rate", "What mattered in the search"):
        assert title in section
    written = json.loads((sweep / "recovery.json").read_text())
    assert written["verdict"] == a.reading.verdict.kind and written["budget"]["asked"] is False
    assert [k["key"] for k in written["importance"]["keys"]] == [k.key for k in a.reading.importance.keys]


def _read(small, large, recipe, **fields):
    """A reading after round 2 from the val_acc of b, B as it is and the recipe at B, paired by seed (10 classes)."""
    import numpy as np

    from harness.assess.paired import estimate
    from harness.studies.recover.verdict import judge
    from harness.studies.recover.words import headline

    trial = recovery.Trial(0, {"lr_factor": 16.0, "lr_schedule": "cosine", "optimizer": None}, "completed", 0.6)
    r = recovery.Recovery(8, 256, 3, list(range(len(small))), estimate(np.subtract(small, large)), {"b": 0.1, "B": 0.1},
                          [trial], 0, None, "", rounds=2, recipe=0, verdict=judge(small, large, recipe, 0.01),
                          budget_asked=False, chance=0.1, **fields)
    r.headline, r.planned_verdict = headline(r), r.verdict  # no seed added: the verdict plans the budget too
    return r


def test_a_recipe_above_b_says_by_how_much_and_never_prints_a_share_above_all_of_the_drop():
    """The case a new user met: batch 8 at chance (0.116), the recipe at batch 256 far above it; the share of the drop
    (24.3: 2435%) is printed as "all", the gain over b with its interval, b at chance said first with the way out;
    the accuracies' intervals stay within [0, 1] (two seeds: t(0.975, 1) = 12.7)."""
    from harness.studies.recover import files
    from harness.studies.recover.section import recovery_verdict_rows

    r = _read([0.116, 0.117], [0.081, 0.081], [0.90, 0.99])
    v = r.verdict
    assert v.kind == "recovered" and v.share > 13  # the ratio itself is kept (recovery.json's recovered.value)
    text = " ".join([r.headline, *(cell for row in recovery_verdict_rows(r) for cell in row)])
    shares = [float(p) for p in __import__("re").findall(r"(-?\d+)%", text)]
    assert shares and max(shares) <= 100, text
    share = recovery_verdict_rows(r)[2][3]
    assert share.startswith("all [") and share.endswith(", all]"), share  # Fieller's upper end: more than all
    assert r.headline.startswith("Batch 8 as it is learned nothing here (val_acc 0.117, chance 0.100)")
    assert "recover.tune_small=true" in r.headline
    gain = v.gain
    assert f"{gain.value:+.3f} [{gain.low:+.3f}, {gain.high:+.3f}] above batch 8: recovered" in r.headline
    for e in (v.small, v.large, v.recipe):
        assert 0.0 <= e.low <= e.value <= e.high <= 1.0
    assert v.recipe.high == 1.0  # cut: uncut, 0.945 +- 12.7 x 0.064 / sqrt(2) runs past 1
    written = files.values(r)
    assert written["gain"] == {"value": gain.value, "low": gain.low, "high": gain.high}
    assert written["recovered"]["value"] == v.share


def test_b_that_learned_and_a_recipe_that_only_matches_it_get_no_gain_and_no_chance_sentence():
    r = _read([0.80, 0.82, 0.81], [0.70, 0.71, 0.705], [0.80, 0.818, 0.811])
    assert r.verdict.kind == "recovered" and r.verdict.shown and "above batch 8" not in r.headline
    assert not r.headline.startswith("Batch 8 as it is learned nothing") and r.headline.startswith("At batch 256")


def test_the_notes_name_the_models_batch_norm_and_the_ema_rules_momentum(tmp_path):
    """With batch norm (3 layers at Keras's 0.99) the linear rule's recipe carries 0.99^8 = 0.9227, which the trial's
    words and the notes say with rho_b's source; the search keeps ghost batch norm and the momentum in its space."""
    sweep = study_sweep(tmp_path / "s", "+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=2", "seed=0",
                        "recover.rules=[linear]", "recover.guided=0", "model.batch_norm=true")
    r = recovery.recover(sweep_files.read(sweep))
    assert r.trials[2].recipe["model.bn_momentum"] == 0.9227
    assert ("The model has 3 batch-norm layers; rho_b = 0.99 (their momentum). Every rule sets the batch-norm momentum "
            "by the EMA rule (Busbridge et al. 2023): the moving statistics average over steps, and batch 64 takes 8x "
            "fewer, so rho_b^8 = 0.9227 keeps their horizon in samples.") in r.notes
    assert not any("not searched" in note for note in r.notes)
    from harness.studies.recover.words import described

    assert "batch-norm momentum 0.923" in described(r.trials[2])
    steep = study_sweep(tmp_path / "steep", "+study=recover", "batch_size=8,1024", "epochs=2", "recover.trials=2",
                        "seed=0", "recover.rules=[linear]", "recover.guided=0", "model.batch_norm=true")
    r = recovery.recover(sweep_files.read(steep))  # 0.99^128 = 0.276: floored at 0.5
    assert r.trials[2].recipe["model.bn_momentum"] == 0.5
    assert any("rho_b^128 = 0.2763 would keep their horizon in samples; it is kept at the floor 0.5, an average over "
               "about 2 steps." in note for note in r.notes)


def test_one_decision_rule_recovered_undecided_or_short_by_the_gaps_interval_against_the_tolerance(tmp_path):
    """The user's image npz: batch 16 at 0.960, the linear rule at 0.948, two seeds, a drop shown: the gap's mean is
    above the tolerance and its interval reaches within it, so the verdict is undecided, never "not recovered", with
    the seeds that would decide it and the command that runs them (command.json's, less its folder, more seeds); a
    gap whose whole interval lies above the tolerance falls short (partly here), one whose mean is within it
    recovered."""
    from harness.store import command_file
    from harness.studies.recover import commands

    undecided = _read([0.955, 0.965], [0.83, 0.84], [0.962, 0.934])
    v = undecided.verdict
    assert v.kind == "undecided" and v.gap.value > 0.01 >= v.gap.low and v.seeds_needed > 2
    assert (f"by {v.gap.value:+.3f} [{v.gap.low:+.3f}, {v.gap.high:+.3f}] (2 seeds), more than the tolerance 0.01 on "
            f"average while its 95% interval reaches within it: undecided at 2 seeds; about {v.seeds_needed} seeds "
            "would decide it") in undecided.headline
    assert "not recovered" not in undecided.headline
    short = _read([0.955, 0.965, 0.96], [0.83, 0.84, 0.835], [0.90, 0.91, 0.905])
    assert short.verdict.kind == "partly" and short.verdict.gap.low > 0.01 and short.verdict.seeds_needed is None
    assert _read([0.955, 0.965], [0.83, 0.84], [0.952, 0.962]).verdict.kind == "recovered"
    assert _read([0.955], [0.83], [0.952]).verdict.kind == "recovered"  # one seed: indicative, never shown
    assert not _read([0.955], [0.83], [0.952]).verdict.shown
    folder = tmp_path / "sweep"
    folder.mkdir()
    argv = ["+study=recover", "batch_size=16,256", "seed=0,1", f"hydra.sweep.dir={folder}", "-m"]
    command_file.write_once(folder, command_file.for_this_process(argv, True))
    sweep = sweep_files.Sweep(folder, [], pd.DataFrame(), None)
    assert commands.more_seeds(sweep, [0, 1], 5) == ("python -m harness +study=recover batch_size=16,256 "
                                                      "seed=0,1,2,3,4 -m")
    # judged on fresh seeds: the seeds it lacks, added to the same folder (only b, B and the recipe run on them)
    assert commands.add_seeds(folder, 3, 5) == f"python -m harness.resume {folder} --add-seeds 2"


def test_a_mean_within_the_tolerance_with_a_wide_interval_is_undecided_not_recovered(monkeypatch):
    """The verdict is symmetric: seed gaps +0.03, -0.02, +0.015 average +0.008, within the tolerance 0.01, but their
    interval [-0.06, +0.08] reaches far past it: undecided (it read recovered while the mean alone decided), with
    the seeds that would decide it; the budget round then still runs (only a shown recovery ends the study)."""
    from harness.studies.recover import rounds

    r = _read([0.93, 0.90, 0.915], [0.80, 0.79, 0.80], [0.90, 0.92, 0.90])
    v = r.verdict
    assert v.gap.value <= 0.01 < v.gap.high and v.kind == "undecided" and not v.shown and v.seeds_needed > 3
    assert (f"keeps batch 8's validation accuracy on average, a gap of {v.gap.value:+.3f} [{v.gap.low:+.3f}, "
            f"{v.gap.high:+.3f}] (3 seeds) against the tolerance 0.01, but its 95% interval reaches beyond the "
            f"tolerance: undecided at 3 seeds; about {v.seeds_needed} seeds would decide it") in r.headline
    record = {"recover": {"settings": {"budget": True, "guided": 0}}, "jobs": []}
    budget = []
    monkeypatch.setattr(rounds.recover, "budget_lengths", lambda plan: budget.append(plan) or [])
    rounds.next_jobs(record, r, 3)
    assert budget, "an undecided verdict ended the study before its budget round"
    rounds.next_jobs(record, _read([0.955], [0.83], [0.952]), 3)  # recovered on one seed: indicative, not shown
    assert len(budget) == 2
    rounds.next_jobs(record, _read([0.955, 0.965], [0.83, 0.84], [0.952, 0.962]), 3)  # shown: the study ends
    assert len(budget) == 2


def test_a_judging_seed_left_out_of_the_verdict_is_named_with_whose_run_did_not_end(tmp_path):
    """The recipe's run on a judging seed failed: the verdict pairs the other seeds, and the headline and
    recovery.json name the seed and the run that has no final validation accuracy there (it was dropped unsaid)."""
    from tests.helpers.sweeps import next_round

    sweep = study_sweep(tmp_path / "s", "+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=8",
                        "seed=0,1", "recover.budget=false", "recover.guided=0")
    for done in (1, 2):
        next_round(sweep, done)
    judged = next_round(sweep, 3)
    recipe = next(job for job in judged if job.arm.startswith("trial_") and "seed=3" in job.overrides)
    record = json.loads((sweep / recipe.job / "run.json").read_text())
    (sweep / recipe.job / "run.json").write_text(json.dumps({**record, "status": "failed"}))
    a = assess(sweep)
    html.write_report(sweep, tmp_path / "reports")  # recovery.json beside the page
    found = a.reading
    trial = recipe.arm.replace("_", " ")
    assert found.left_out == {3: f"the recipe ({trial})"} and found.verdict is not None
    assert found.headline.endswith("Left out of the verdict, a judging seed whose runs did not all end with a "
                                   f"validation accuracy (not finished, failed or diverged): seed 3: the recipe "
                                   f"({trial}).")
    assert json.loads((sweep / "recovery.json").read_text())["left_out"] == {"3": f"the recipe ({trial})"}
