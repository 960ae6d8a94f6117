"""+study=recover's later rounds, planned from the files of the rounds before (harness.launch.rounds), on
constructed sweeps: the jobs and configs the real command plans, made-up accuracies set by the test."""
import dataclasses
import json
import shutil

import pytest

from harness.assess import sweep as sweep_files
from harness.store import fork, sweep_file
from harness.studies.recover import choice
from harness.studies.recover import reading as recovery
from tests.helpers.sweeps import _command_plan, next_round, set_final, study_sweep

# recover.judge=0 here: the verdict pairs the seeds that chose (the rounds' mechanics these tests were built on);
# the judging round on fresh seeds has tests of its own
COMMAND = ("+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=4", "seed=0,1,2", "recover.rules=[]",
           "recover.guided=0", "recover.judge=0", "recover.rungs=[]")
TRIALS = {6: 0.70, 7: 0.90, 8: 0.60, 9: 0.80}  # round 1's trial runs (jobs 6-9: trials 0-3) and their tune_acc


def _round_one(path):
    sweep = study_sweep(path, *COMMAND)
    for job, tune in TRIALS.items():
        set_final(sweep, job, tune_acc=tune)
    return sweep


def _resumed(sweep):
    """sweep.json as the same command run again writes it (round 1 planned again, the later rounds kept)."""
    dataclasses.replace(_command_plan(COMMAND), output_dir=sweep).write()


def test_round_two_confirms_the_best_trials_on_the_other_seeds_at_bs_own_jobs(tmp_path):
    sweep = _round_one(tmp_path / "s")
    jobs = next_round(sweep, 1)
    content = json.loads((sweep / "sweep.json").read_text())
    assert [(j.job, j.arm, j.round) for j in jobs] == [
        ("10", "trial_1", 2), ("11", "trial_1", 2), ("12", "trial_3", 2), ("13", "trial_3", 2),
        ("14", "trial_0", 2), ("15", "trial_0", 2)]  # the best 3 by tune_acc, at seeds 1 and 2
    assert content["rounds"] == 2 and content["more_rounds"] is True
    record = content["recover"]
    large = {seed: content["jobs"][int(job)]["overrides"] for seed, job in record["reference"]["B"].items()}
    for job, seed in zip(jobs, [1, 2] * 3):
        trial = record["trials"][int(job.arm.split("_")[1])]
        assert job.overrides[:len(large[str(seed)])] == large[str(seed)]
        assert job.overrides[len(large[str(seed)]):] == [f"{k}={v}" for k, v in trial.items() if v is not None] + [
            "probes=false"]  # a trial's run leaves the probes out (recover.probes)
        run = json.loads((sweep / job.job / "run.json").read_text())["config"]
        assert run["seed"] == seed and run["batch_size"] == 64 and run["lr_factor"] == trial["lr_factor"]


def test_a_resumed_command_plans_round_two_the_same_and_keeps_its_numbers(tmp_path):
    """Run again with the same files, round 2 is the same jobs under the same numbers (their finished runs are
    not run again); once round 1's files say otherwise, the new round takes numbers after every folder, and the
    stale runs are no part of the reading."""
    sweep = _round_one(tmp_path / "s")
    first = next_round(sweep, 1)
    before = json.loads((sweep / "sweep.json").read_text())
    _resumed(sweep)
    assert json.loads((sweep / "sweep.json").read_text())["jobs"] == before["jobs"]  # the later rounds kept
    again = next_round(sweep, 1)
    assert again == first and json.loads((sweep / "sweep.json").read_text()) == before
    set_final(sweep, 8, tune_acc=0.99)  # trial 2, rerun after a failure, say: now the best
    _resumed(sweep)
    changed = next_round(sweep, 1)
    assert [j.job for j in changed] == [str(n) for n in range(16, 22)] and changed[0].arm == "trial_2"
    arms = recovery.arms(sweep_files.read(sweep))
    assert "10" not in arms and arms["16"] == "trial_2"


def test_the_verdict_and_shares_from_known_per_seed_numbers(tmp_path):
    """b, B and the recipe (trial 1, the best confirmed on the tuning slice; the others best on validation, which
    must not choose) at three seeds, set by the test: the paired gap, the
    share with Fieller's interval (checked on a grid of ratios), the verdict's kind; one gap within the tolerance
    on average whose interval reaches past it is undecided and names the seeds that would decide it."""
    from scipy import stats

    sweep = _round_one(tmp_path / "s")
    next_round(sweep, 1)
    for job, tune in ((10, 0.95), (11, 0.95), (12, 0.5), (13, 0.5), (14, 0.5), (15, 0.5)):
        set_final(sweep, job, tune_acc=tune)
    for job in (12, 13, 14, 15):  # the other confirmed trials: best on validation, worst on the tuning slice
        set_final(sweep, job, val_acc=0.99)
    small, large = [0.90, 0.92, 0.91], [0.80, 0.83, 0.79]  # b: jobs 0, 2, 4; B: 1, 3, 5
    for seed in range(3):
        set_final(sweep, 2 * seed, val_acc=small[seed])
        set_final(sweep, 2 * seed + 1, val_acc=large[seed])

    def verdict(recipe):
        for job, value in zip((7, 10, 11), recipe):  # trial 1 at seeds 0, 1, 2
            set_final(sweep, job, val_acc=value)
        return recovery.recover(sweep_files.read(sweep))

    r = verdict([0.89, 0.915, 0.905])
    gap = [0.01, 0.005, 0.005]
    high = sum(gap) / 3 + stats.t.ppf(0.975, 2) * stats.tstd(gap) / 3 ** 0.5
    assert r.recipe == 1 and r.verdict.kind == "undecided" and not r.verdict.shown
    assert r.verdict.gap.high == pytest.approx(high) and high > 0.01
    assert r.verdict.seeds_needed == next(n for n in range(2, 100) if stats.t.ppf(0.975, n - 1) * stats.tstd(gap)
                                          / n ** 0.5 <= 0.01 - sum(gap) / 3)
    assert "but its 95% interval reaches beyond the tolerance: undecided at 3 seeds; about" in r.headline

    r = verdict([0.85, 0.87, 0.84])
    x = [a - b for a, b in zip([0.85, 0.87, 0.84], large)]
    y = [a - b for a, b in zip(small, large)]
    assert r.verdict.kind == "partly" and r.verdict.share == pytest.approx(sum(x) / sum(y))
    inside = [t / 1000 for t in range(-2000, 3000)
              if abs(stats.ttest_1samp([a - t / 1000 * b for a, b in zip(x, y)], 0).statistic) <= stats.t.ppf(0.975, 2)]
    assert r.verdict.share_low == pytest.approx(inside[0], abs=1e-3)
    assert r.verdict.share_high == pytest.approx(inside[-1], abs=1e-3)
    assert 0 < r.verdict.share_low and "partly recovered" in r.headline

    r = verdict([0.82, 0.81, 0.80])
    assert r.verdict.kind == "not_recovered" and r.verdict.share_low < 0 < r.verdict.share_high
    written = r.as_json()
    assert written["verdict"] == "not_recovered" and written["recipe"] == json.loads(
        (sweep / "sweep.json").read_text())["recover"]["trials"][1]
    assert written["confirmed"][0] == {"trial": 1, "tune_acc": pytest.approx(0.9333, abs=1e-3), "seeds": 3}


def test_the_budget_doubles_the_epochs_until_b_is_reached_and_a_recovered_recipe_has_none(tmp_path):
    sweep = _round_one(tmp_path / "s")
    next_round(sweep, 1)
    for job in (12, 13, 14, 15):  # trial 1 stays the best confirmed: the recipe
        set_final(sweep, job, tune_acc=0.5)
    for job in (7, 10, 11):  # and it stays below b on validation: no recovery
        set_final(sweep, job, val_acc=0.5)
    budget = next_round(sweep, 2)
    assert {j.arm for j in budget} == {"budget_4"} and [j.epochs for j in budget] == [4, 4, 4]
    assert all("epochs=4" in j.overrides and "epochs=2" not in j.overrides for j in budget)
    small = recovery.recover(sweep_files.read(sweep)).small_tune
    for job in budget:
        set_final(sweep, job.job, tune_acc=small + 0.01)
    assert next_round(sweep, 3) == []
    content = json.loads((sweep / "sweep.json").read_text())
    assert content["more_rounds"] is False and content["rounds"] == 3
    r = recovery.recover(sweep_files.read(sweep))
    assert r.budget[0].reached and "reaches batch 8's tuning accuracy with 2x the epochs (4)" in r.headline
    assert sweep_files.runs_left(sweep) == []

    recovered = _round_one(tmp_path / "r")
    next_round(recovered, 1)
    for job in (12, 13, 14, 15):  # trial 1 stays the best confirmed
        set_final(recovered, job, tune_acc=0.5)
    for job, value in ((7, 0.92), (10, 0.92), (11, 0.92), (0, 0.9), (2, 0.9), (4, 0.9)):
        set_final(recovered, job, val_acc=value)
    assert next_round(recovered, 2) == [] and recovery.recover(sweep_files.read(recovered)).verdict.kind == "recovered"
    assert not sweep_file.more_rounds(sweep_file.read(recovered))


def test_with_one_seed_round_two_is_passed_over_and_the_verdict_is_indicative(tmp_path):
    sweep = study_sweep(tmp_path / "s", "+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=2",
                        "recover.rungs=[]", "seed=0", "recover.rules=[]", "recover.guided=0", "recover.judge=0")
    set_final(sweep, 3, val_acc=0.1)  # trial 1 (job 3): far below b
    jobs = next_round(sweep, 1)
    assert {j.round for j in jobs} == {3} and {j.arm for j in jobs} == {"budget_4"} and len(jobs) == 1
    r = recovery.recover(sweep_files.read(sweep))
    assert r.verdict.indicative and r.verdict.share_low is None and "one seed: indicative" in r.headline


def test_a_command_stopped_between_two_rounds_has_runs_left(tmp_path):
    sweep = _round_one(tmp_path / "s")
    assert sweep_files.runs_left(sweep) == ["s: round 2 on (not planned yet)"]


def test_tune_small_gives_b_the_same_search_and_b_with_its_recipe_is_what_b_is_compared_with(tmp_path):
    """recover.tune_small=true: the same Sobol points at b (lr_factor over [1/4, 4], not x B/b), confirmed on the
    other seeds as B's are; the verdict compares B's recipe with b's recipe, not with b as it is."""
    sweep = study_sweep(tmp_path / "s", "+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=4",
                        "seed=0,1", "recover.tune_small=true", "recover.budget=false", "recover.rules=[]",
                        "recover.guided=0", "recover.judge=0", "recover.rungs=[]")
    record = json.loads((sweep / "sweep.json").read_text())["recover"]
    arms = record["arms"]
    assert list(arms.values()) == ["as_is"] * 4 + [f"trial_{k}" for k in range(4)] + [
        f"small_trial_{k}" for k in range(4)]
    for large, small in zip(record["trials"], record["small_trials"]):
        assert 0.25 <= small["lr_factor"] <= 4.0 and small["label_smoothing"] == large["label_smoothing"]
        assert small["optimizer"] == large["optimizer"] and small["lr_schedule"] == large["lr_schedule"]
    for job in (8, 9, 10, 11):  # b's trials ran at b, seed 0
        config = json.loads((sweep / str(job) / "run.json").read_text())["config"]
        assert config["batch_size"] == 8 and config["seed"] == 0
    for job, tune in zip(range(4, 12), (0.9, 0.8, 0.7, 0.6, 0.5, 0.95, 0.6, 0.55)):
        set_final(sweep, job, tune_acc=tune)
    jobs = next_round(sweep, 1)
    assert [j.arm for j in jobs] == ["trial_0", "trial_1", "trial_2", "small_trial_1", "small_trial_2",
                                     "small_trial_3"]
    for job in jobs:
        set_final(sweep, job.job, tune_acc=0.99 if job.arm in ("trial_0", "small_trial_1") else 0.5)
    for job, value in ((0, 0.5), (2, 0.5), (9, 0.93), (jobs[3].job, 0.94), (4, 0.90), (jobs[0].job, 0.91)):
        set_final(sweep, job, val_acc=value)  # b as is far below; b with its recipe (small trial 1) well above
    r = recovery.recover(sweep_files.read(sweep))
    assert r.recipe == 0 and r.small_recipe == 1 and r.small_arm == "small_trial_1"
    assert r.verdict.small.value == pytest.approx(0.935) and r.verdict.recipe.value == pytest.approx(0.905)
    assert r.verdict.kind != "recovered" and any("its own best confirmed recipe, trial 1 (" in n for n in r.notes)


def _mark(sweep, job, status):
    path = sweep / str(job) / "run.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "status": status}))


def test_a_resumed_sweep_keeps_its_budget_rounds_and_a_round_not_ended_plans_nothing(tmp_path):
    """Killed after its budget reached b at 4x (rounds 3 and 4 ran) and run again: the same rounds are planned
    again, under the same numbers, and none is dropped; a run of a round still marked running (a SLURM task killed)
    stops the planning until it is resumed."""
    sweep = _round_one(tmp_path / "s")
    next_round(sweep, 1)
    for job in (12, 13, 14, 15):
        set_final(sweep, job, tune_acc=0.5)
    for job in (7, 10, 11):
        set_final(sweep, job, val_acc=0.5)
    small = recovery.recover(sweep_files.read(sweep)).small_tune
    for job in next_round(sweep, 2):  # 2x: below b
        set_final(sweep, job.job, tune_acc=small - 0.1)
    for job in next_round(sweep, 3):  # 4x: b reached
        set_final(sweep, job.job, tune_acc=small + 0.1)
    assert next_round(sweep, 4) == []
    before = json.loads((sweep / "sweep.json").read_text())
    assert before["rounds"] == 4 and not before["more_rounds"]
    _resumed(sweep)
    for done in (1, 2, 3):
        assert [j.job for j in next_round(sweep, done)] == [j["job"] for j in before["jobs"] if j["round"] == done + 1]
    assert next_round(sweep, 4) == [] and json.loads((sweep / "sweep.json").read_text()) == before

    unfinished = _round_one(tmp_path / "u")
    next_round(unfinished, 1)
    _mark(unfinished, 10, "running")
    assert next_round(unfinished, 2) == [] and sweep_file.more_rounds(sweep_file.read(unfinished))
    assert any("not planned yet" in left for left in sweep_files.runs_left(unfinished))


def test_a_confirmed_seed_that_failed_counts_as_zero(tmp_path):
    """Trial 1 leads the search; its run at seed 1 fails. Counted as 0, its mean falls below trial 3's: the recipe is
    trial 3, and the note says how the failure was counted."""
    sweep = _round_one(tmp_path / "s")
    next_round(sweep, 1)
    for job, tune in ((10, 0.95), (11, 0.95), (12, 0.85), (13, 0.85), (14, 0.5), (15, 0.5)):
        set_final(sweep, job, tune_acc=tune)
    _mark(sweep, 10, "failed")
    r = recovery.recover(sweep_files.read(sweep))
    assert r.confirmed[0] == (1, pytest.approx((0.90 + 0.95) / 3), 2) and r.recipe == 3
    assert "trial 1 (0.617 over 3 seeds, 1 failed or diverged, counted as 0)" in " ".join(r.notes)


@pytest.mark.parametrize("large, small, epochs, lengths", [(128, 8, 5, [10, 20, 40, 80]), (20, 8, 1, [2, 3]),
                                                             (12, 8, 2, [3]), (64, 8, 2, [4, 8, 16])])
def test_the_budget_lengths_double_up_to_the_ratio_without_repeats(large, small, epochs, lengths):
    from harness.studies.recover.plan import budget_lengths

    assert budget_lengths({"epochs": epochs, "large_batch": large, "small_batch": small}) == lengths


def test_where_b_as_it_is_lost_nothing_there_is_no_share_and_no_partly():
    """B as it is beat b; the recipe is further behind b than the tolerance: not recovered, no share of a drop
    there is not (a ratio of a negative drop would read as a large share); one seed the same."""
    from harness.studies.recover.verdict import judge

    v = judge([0.80, 0.82, 0.81], [0.85, 0.86, 0.84], [0.70, 0.72, 0.69], 0.01)
    assert v.kind == "not_recovered" and v.share is None and v.share_low is None
    one = judge([0.80], [0.85], [0.70], 0.01)
    assert one.kind == "not_recovered" and one.share is None


def test_every_rule_is_confirmed_and_the_simplest_recipe_within_the_tolerance_is_chosen(tmp_path):
    """Four Sobol trials (jobs 4-7) and the three rules (jobs 8-10: linear, sqrt, adam_sde). Round 2 confirms the
    best three by tune_acc and every rule not among them. The linear rule's mean is within recover.tolerance
    (0.01) of the best, a searched trial's: the rule is the recipe, and the headline says the search found nothing
    better; 0.02 below it, the searched trial is."""
    command = ("+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=4", "seed=0,1", "recover.budget=false",
               "recover.rungs=[]", "recover.guided=0", "recover.judge=0", "recover.rules=[linear,sqrt,adam_sde]")
    sweep = study_sweep(tmp_path / "s", *command)
    for job, tune in zip(range(4, 11), (0.70, 0.95, 0.60, 0.80, 0.94, 0.50, 0.65)):
        set_final(sweep, job, tune_acc=tune)
    jobs = next_round(sweep, 1)
    assert [j.arm for j in jobs] == ["trial_1", "trial_4", "trial_3", "trial_6", "trial_5"]  # rules: 4, 5, 6
    by_arm = {j.arm: j.job for j in jobs}

    def read(linear):
        set_final(sweep, by_arm["trial_1"], tune_acc=0.95)
        set_final(sweep, by_arm["trial_4"], tune_acc=linear)
        return recovery.recover(sweep_files.read(sweep))

    r = read(0.945)  # linear: mean 0.9425 against trial 1's 0.95
    assert r.recipe == 4 and r.trials[4].rule == "linear" and r.trials[4].source == "rule"
    assert "the linear rule (" in r.headline and "found none better than the rule" in r.headline
    assert any("trial 4 is within recover.tolerance (0.01) of the best, trial 1's 0.950, and simpler (a rule)" in n
               for n in r.notes)
    written = r.as_json()
    assert written["recipe_trial"] == 4 and written["trials"][4]["source"] == "rule"
    assert written["trials"][4]["rule"] == "linear" and written["trials"][0]["source"] == "sobol"
    r = read(0.925)  # linear: mean 0.9325, 0.0175 below
    assert r.recipe == 1 and "found none better" not in r.headline


def test_the_simplest_candidate_a_rule_then_fewer_keys_then_the_best_mean():
    trial = recovery.Trial
    trials = [trial(0, {"lr_factor": 2.0, "momentum": 0.9, "optimizer": None}, "completed", 0.9),
              trial(1, {"lr_factor": 3.0, "momentum": 0.9, "optimizer": "adamw"}, "completed", 0.9),
              trial(2, {"lr_factor": 16.0, "warmup_epochs": 1.0}, "completed", 0.9, source="rule", rule="linear"),
              trial(3, {"lr_factor": 4.0, "momentum": 0.0, "beta_2": 0.98, "epsilon": 2e-8}, "completed", 0.9,
                    source="rule", rule="adam_sde")]
    assert choice.simplest([(0, 0.90), (1, 0.905), (2, 0.80), (3, 0.80)], trials, 0.01) == 0  # fewer keys set
    assert choice.simplest([(0, 0.90), (1, 0.915), (2, 0.80)], trials, 0.01) == 1  # beyond the tolerance
    assert choice.simplest([(0, 0.90), (1, 0.905), (2, 0.901), (3, 0.91)], trials, 0.01) == 2  # a rule, 2 keys
    assert choice.simplest([(1, 0.9), (3, 0.9)], trials, 0.0) == 3 and choice.simplest([], trials, 0.01) is None


GUIDED = ("+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=4", "seed=0,1", "recover.guided=3",
          "recover.rungs=[]", "recover.budget=false", "recover.rules=[linear]", "recover.judge=0")


def test_the_guided_round_is_proposed_from_round_one_and_planned_the_same_after_a_kill(tmp_path):
    """Round 2 runs recover.guided=3 recipes at B on the search's seed (trials 5-7, after 4 Sobol points and the
    linear rule), proposed from round 1's files and kept as an Optuna study in the sweep folder; killed with one of
    them finished and run again, the command plans the same round under the same numbers; the confirmation is
    round 3, and the reading reads each guided recipe back from its job."""
    import optuna

    from harness.studies.recover import guided

    sweep = study_sweep(tmp_path / "s", *GUIDED)
    for job, tune in zip(range(4, 9), (0.70, 0.95, 0.60, 0.80, 0.90)):  # trials 0-3 and the rule (job 8)
        set_final(sweep, job, tune_acc=tune)
    jobs = next_round(sweep, 1)
    assert [(j.arm, j.round, j.job) for j in jobs] == [("trial_5", 2, "9"), ("trial_6", 2, "10"), ("trial_7", 2, "11")]
    for job in jobs:
        config = json.loads((sweep / job.job / "run.json").read_text())["config"]
        assert config["seed"] == 0 and config["batch_size"] == 64 and 0.25 <= config["lr_factor"] <= 4 * 64 / 8
    stored = optuna.load_study(study_name="recover", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(sweep / guided.STUDY_FILE))))
    assert [(t.user_attrs["trial"], t.value) for t in stored.trials] == [(0, 0.70), (1, 0.95), (2, 0.60), (3, 0.80)]

    set_final(sweep, jobs[0].job, tune_acc=0.99)  # finished before the kill
    before = json.loads((sweep / "sweep.json").read_text())
    dataclasses.replace(_command_plan(GUIDED), output_dir=sweep).write()
    assert next_round(sweep, 1) == jobs and json.loads((sweep / "sweep.json").read_text()) == before

    r = recovery.recover(sweep_files.read(sweep))
    assert [t.source for t in r.trials] == ["sobol"] * 4 + ["rule"] + ["guided"] * 3
    content = json.loads((sweep / "sweep.json").read_text())
    for trial in r.trials[5:]:
        job = next(j for j in content["jobs"] if j["arm"] == f"trial_{trial.number}")
        run = json.loads((sweep / job["job"] / "run.json").read_text())["config"]
        assert run["lr_factor"] == trial.recipe["lr_factor"] and run["momentum"] == trial.recipe["momentum"]
    assert r.verdict is None and r.best == 5 and r.headline.startswith("The search and its guided")
    confirm = next_round(sweep, 2)
    assert {j.round for j in confirm} == {3} and [j.arm for j in confirm] == ["trial_5", "trial_1", "trial_4"]
    assert recovery.recover(sweep_files.read(sweep)).verdict is not None
    assert len(optuna.load_study(study_name="recover", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(sweep / guided.STUDY_FILE)))).trials) == 4 + 3


def test_the_budget_runs_the_best_rule_beside_a_searched_recipe_and_names_the_one_that_reaches_b(tmp_path):
    """The recipe is a Sobol trial (trial 0); the linear rule (trial 2) was confirmed below it. The budget at 2E runs
    both on every seed, and where only the rule reaches b's tuning accuracy the reading says so: true of the rule,
    where the recipe alone would have read as 'not reached'. A recipe that is a rule gets nothing beside it."""
    sweep = study_sweep(tmp_path / "s", "+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=2", "seed=0,1",
                        "recover.rungs=[]", "recover.rules=[linear]", "recover.guided=0", "recover.judge=0")
    for job, tune in ((4, 0.95), (5, 0.60), (6, 0.80)):  # trials 0, 1 and the linear rule at seed 0
        set_final(sweep, job, tune_acc=tune)
    confirm = {j.arm: j.job for j in next_round(sweep, 1)}
    for arm, tune in (("trial_0", 0.95), ("trial_1", 0.6), ("trial_2", 0.8)):
        set_final(sweep, confirm[arm], tune_acc=tune)
    for job in (4, confirm["trial_0"]):  # below b on validation: not recovered
        set_final(sweep, job, val_acc=0.2)
    budget = next_round(sweep, 2)
    assert sorted(j.arm for j in budget) == ["budget_4"] * 2 + ["budget_4_trial_2"] * 2
    rule_jobs = [j for j in budget if j.arm == "budget_4_trial_2"]
    assert all("lr_factor=8.0" in j.overrides and "epochs=4" in j.overrides for j in rule_jobs)
    small = recovery.recover(sweep_files.read(sweep)).small_tune
    for job in budget:
        set_final(sweep, job.job, tune_acc=small + 0.01 if job.arm.endswith("trial_2") else small - 0.2)
    assert next_round(sweep, 3) == []  # reached: no longer run
    r = recovery.recover(sweep_files.read(sweep))
    assert r.budget_rule_trial == 2 and not r.budget[0].reached and r.budget_rule[0].reached
    assert "reaches batch 8's tuning accuracy with 2x the epochs (4) with the linear rule (trial 2)" in r.headline
    written = r.as_json()["budget"]
    assert written["rule_trial"] == 2 and written["rule_lengths"][0]["reached"] is True
    from harness.studies.recover.section import recovery_budget_rows

    assert [row[0] for row in recovery_budget_rows(r)] == ["4 (recipe)", "4 (linear rule)"]


def test_a_round_timed_alone_is_one_slurm_task_at_a_time(tmp_path):
    """A study's round whose jobs run alone (sweep.json's `alone`, harness.studies.study.Round) goes to SLURM with a
    throttle of one, whatever array_parallelism says; the rounds before it keep theirs."""
    import json

    from hydra_plugins.harness_launcher.slurm import cut_arrays, runs_alone

    jobs = [{"job": str(n), "overrides": [], "config": "x", "round": 1 if n < 4 else 2, "alone": n >= 4}
            for n in range(6)]
    (tmp_path / "sweep.json").write_text(json.dumps({"format": 2, "study": "choose", "jobs": jobs, "rounds": 2}))
    assert not runs_alone(tmp_path, [0, 1, 2, 3]) and runs_alone(tmp_path, [4, 5])
    assert cut_arrays([4, 5], 1000, 1)[1] == 1


JUDGED = tuple(c for c in COMMAND if c != "recover.judge=0")  # recover.judge: 3 fresh seeds, as configured


def test_the_recipe_is_judged_on_fresh_seeds_that_did_not_choose_it(tmp_path):
    """Trial 1 is chosen on seeds 0-2 (the search and the confirmation), where it matches b on validation; the round
    after runs b and B as they are and the recipe on seeds 3-5, where it falls 0.05 short. The verdict pairs those
    fresh seeds only: partly recovered, where the seeds that chose it would have read recovered (the winner's curse);
    a judging run's tune_acc, however low, never changes the recipe."""
    from harness.studies.recover.verdict import judge

    sweep = study_sweep(tmp_path / "s", *JUDGED)
    for job, tune in TRIALS.items():
        set_final(sweep, job, tune_acc=tune)
    next_round(sweep, 1)
    for job, tune in ((10, 0.95), (11, 0.95), (12, 0.5), (13, 0.5), (14, 0.5), (15, 0.5)):
        set_final(sweep, job, tune_acc=tune)
    judging = next_round(sweep, 2)
    seed_of = {j.job: int(next(o for o in j.overrides if o.startswith("seed=")).split("=")[1]) for j in judging}
    size_of = {j.job: int(next(o for o in j.overrides if o.startswith("batch_size=")).split("=")[1]) for j in judging}
    assert [(j.arm, size_of[j.job], seed_of[j.job]) for j in judging] == [
        (arm, size, seed) for seed in (3, 4, 5) for arm, size in (("as_is", 8), ("as_is", 64), ("trial_1", 64))]
    chose = {"b": [0.90, 0.92, 0.91], "B": [0.80, 0.83, 0.79], "recipe": [0.902, 0.919, 0.911]}
    for seed in range(3):
        set_final(sweep, 2 * seed, val_acc=chose["b"][seed])
        set_final(sweep, 2 * seed + 1, val_acc=chose["B"][seed])
    for job, value in zip((7, 10, 11), chose["recipe"]):  # trial 1 at seeds 0, 1, 2
        set_final(sweep, job, val_acc=value)
    judged = {"b": [0.91, 0.90, 0.92], "B": [0.80, 0.81, 0.80], "recipe": [0.86, 0.85, 0.871]}
    for job in judging:
        side = {"as_is": "b" if size_of[job.job] == 8 else "B", "trial_1": "recipe"}[job.arm]
        set_final(sweep, job.job, val_acc=judged[side][seed_of[job.job] - 3], tune_acc=0.1)
    r = recovery.recover(sweep_files.read(sweep))
    assert r.recipe == 1 and r.seeds == [0, 1, 2] and r.judged == [3, 4, 5]
    v = r.verdict
    assert v.gap.n == 3 and v.gap.value == pytest.approx(0.05, abs=1e-3) and v.kind == "partly"
    assert judge(*(chose[k] for k in ("b", "B", "recipe")), 0.01).kind == "recovered"  # had the choosers judged
    assert any("Seeds 0, 1, 2 chose the recipe (the search on seed 0, the confirmation on the others); seeds 3, 4, 5, "
               "run for the purpose, judged it" in note for note in r.notes)
    assert r.as_json()["judged"] == [3, 4, 5] and r.as_json()["chose"] == [0, 1, 2]
    budget = next_round(sweep, 3)  # not shown recovered: the budget round follows the judging
    assert {j.arm for j in budget} == {"budget_4"} and {j.round for j in budget} == {4}


RUNGS = ("+study=recover", "batch_size=8,64", "epochs=4", "recover.trials=8", "seed=0,1", "recover.rules=[linear]",
         "recover.guided=2", "recover.judge=0", "recover.budget=false", "recover.rungs=[0.25,0.5]")


def test_the_search_runs_in_rungs_the_better_half_continuing_from_its_paused_run(tmp_path):
    """Eight Sobol trials (jobs 4-11) pause at epoch 1 of 4 (the rule, job 12, runs whole); the better 4 by tune_acc
    there continue from copies of their paused runs to epoch 2, the better 2 of those to the end. The cut trials are
    never confirmed, and the guided round's sampler is told them as pruned; a resumed command plans the same."""
    import optuna

    from harness.studies.recover import guided

    sweep = study_sweep(tmp_path / "s", *RUNGS)
    record = json.loads((sweep / "sweep.json").read_text())["recover"]
    assert record["rungs"] == [1, 2]
    jobs = json.loads((sweep / "sweep.json").read_text())["jobs"]
    assert [("pause_epoch=1" in j["overrides"]) for j in jobs[4:13]] == [True] * 8 + [False]
    assert json.loads((sweep / "4" / "run.json").read_text())["status"] == "paused"
    at_one = dict(zip(range(4, 12), (0.50, 0.80, 0.55, 0.70, 0.90, 0.60, 0.65, 0.75)))
    for job, tune in at_one.items():
        set_final(sweep, job, tune_acc=tune)
    first = next_round(sweep, 1)  # trials 4, 1, 7, 3 (jobs 8, 5, 11, 7): the better half at epoch 1
    assert [(j.arm, j.continues, j.round) for j in first] == [
        ("trial_4", "8", 2), ("trial_1", "5", 2), ("trial_7", "11", 2), ("trial_3", "7", 2)]
    assert all("pause_epoch=2" in j.overrides and "pause_epoch=1" not in j.overrides for j in first)
    shutil.rmtree(sweep / "13")  # forked, not run yet: not started (it shares its paused run's fingerprint)
    assert fork.fork(sweep / "8", sweep / "13") and "13" in sweep_files.not_started_jobs(sweep)
    shutil.rmtree(sweep / "13")
    _resumed_with(sweep, RUNGS)
    assert next_round(sweep, 1) == first  # planned the same, the same numbers
    for job, tune in zip((13, 14, 15, 16), (0.60, 0.95, 0.70, 0.91)):
        set_final(sweep, job, tune_acc=tune)
    second = next_round(sweep, 2)
    assert [(j.arm, j.continues) for j in second] == [("trial_1", "14"), ("trial_3", "16")]
    assert not any(o.startswith("pause_epoch=") for j in second for o in j.overrides)
    told = next_round(sweep, 3)  # the guided round
    assert [j.arm for j in told] == ["trial_9", "trial_10"]
    study = optuna.load_study(study_name=guided.STUDY_NAME, storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(sweep / guided.STUDY_FILE))))
    states = {t.user_attrs["trial"]: (t.state.name, t.intermediate_values) for t in study.trials}
    assert {k for k, (state, _) in states.items() if state == "PRUNED"} == {0, 2, 5, 6, 4, 7}
    assert states[4] == ("PRUNED", {2: 0.60}) and states[0] == ("PRUNED", {1: 0.50})
    r = recovery.recover(sweep_files.read(sweep))
    assert {t.number: t.cut_at for t in r.trials if t.cut_at is not None} == {0: 1, 2: 1, 5: 1, 6: 1, 4: 2, 7: 2}
    assert r.trials[1].rungs == {1: 0.80, 2: 0.95} and r.trials[1].status == "completed"
    assert any("4 at epoch 1, 2 at epoch 2" in note for note in r.notes)
    assert "pause_" not in r.command  # the recipe as a user runs it: the rungs are the study's
    confirming = {j.arm for j in next_round(sweep, 4)}
    assert confirming and not confirming & {f"trial_{k}" for k in (0, 2, 4, 5, 6, 7)}


def _resumed_with(sweep, command):
    dataclasses.replace(_command_plan(command), output_dir=sweep).write()


def _ran_whole(sweep, job, epochs):
    """Trial run `job` as pause_when=cheaper leaves it where its pause does not pay: trained on to its last epoch
    (the later rows here repeat the rung's numbers), completed, its estimate in run.json, no checkpoint."""
    import pandas as pd

    rows = pd.read_parquet(sweep / str(job) / "metrics.parquet").to_dict("records")
    rows += [{**rows[-1], "epoch": epoch} for epoch in range(len(rows) + 1, epochs + 1)]
    pd.DataFrame(rows).to_parquet(sweep / str(job) / "metrics.parquet", index=False)
    record = json.loads((sweep / str(job) / "run.json").read_text())
    record.pop("paused_at_epoch")
    (sweep / str(job) / "run.json").write_text(json.dumps({**record, "status": "completed", "pause": {"pays": False},
                                                           "epochs_completed": epochs}))
    (sweep / str(job) / "checkpoint.npz").unlink()


def test_a_trial_that_ran_whole_goes_on_or_is_cut_by_its_rung_alone(tmp_path):
    """Trials 0 and 1 ran whole (their pause did not pay): trial 0, among the better half at the rung, needs no
    job to go on and its final counts; trial 1, below it, is cut though its final tune_acc, the best of all, is on
    disk: which trials go on never depends on which runs paused."""
    command = tuple(c for c in RUNGS if not c.startswith("recover.rungs")) + ("recover.rungs=[0.5]",)
    sweep = study_sweep(tmp_path / "s", *command)
    for job, tune in zip(range(4, 12), (0.95, 0.52, 0.55, 0.70, 0.90, 0.60, 0.65, 0.75)):
        set_final(sweep, job, tune_acc=tune)
    diverged = json.loads((sweep / "10" / "run.json").read_text())  # trial 6 diverged before the rung (epoch 1)
    (sweep / "10" / "run.json").write_text(json.dumps({**diverged, "status": "diverged"}))
    set_final(sweep, 10, tune_acc=float("nan"))
    _ran_whole(sweep, 4, 4)
    _ran_whole(sweep, 5, 4)
    set_final(sweep, 4, tune_acc=0.97)  # the epoch-4 rows: trial 0's and trial 1's finals
    set_final(sweep, 5, tune_acc=0.99)
    jobs = next_round(sweep, 1)  # the better half at epoch 2: trials 0, 4, 7, 3, of which 0 ran whole
    assert [(j.arm, j.continues) for j in jobs] == [("trial_4", "8"), ("trial_7", "11"), ("trial_3", "7")]
    r = recovery.recover(sweep_files.read(sweep))
    assert r.trials[0].cut_at is None and r.trials[0].tune_acc == 0.97
    assert r.trials[1].cut_at == 2 and r.trials[1].tune_acc is None and r.trials[1].status == "completed"
    assert {t.number for t in r.trials if t.cut_at is not None} == {1, 2, 5}  # trial 6 diverged: never cut
    assert r.trials[6].status == "diverged" and r.trials[6].rungs == {} and r.ranked()[-1].number == 6


def test_a_trial_that_diverged_at_the_rung_is_no_entrant_whatever_its_tune_acc_there(tmp_path):
    """Trial 5's loss went NaN in the rung's epoch, yet its tuning slice was measured there (weights of NaN predict
    one class: a finite accuracy, here the best of all): it diverged, so it neither takes a place among the better
    half, whose every place goes to a trial that can go on, nor is it cut (the sampler is told it diverged)."""
    command = tuple(c for c in RUNGS if not c.startswith("recover.rungs")) + ("recover.rungs=[0.5]",)
    sweep = study_sweep(tmp_path / "s", *command)
    for job, tune in zip(range(4, 12), (0.50, 0.52, 0.55, 0.70, 0.90, 0.60, 0.65, 0.75)):
        set_final(sweep, job, tune_acc=tune)
    record = json.loads((sweep / "9" / "run.json").read_text())
    record.pop("paused_at_epoch")
    (sweep / "9" / "run.json").write_text(json.dumps({**record, "status": "diverged"}))
    (sweep / "9" / "checkpoint.npz").unlink()
    set_final(sweep, 9, tune_acc=0.96, train_loss=float("nan"))
    jobs = next_round(sweep, 1)  # the better half at epoch 2 of those that reached it: trials 4, 7, 3, 6
    assert [(j.arm, j.continues) for j in jobs] == [("trial_4", "8"), ("trial_7", "11"), ("trial_3", "7"),
                                                    ("trial_6", "10")]
    r = recovery.recover(sweep_files.read(sweep))
    assert r.trials[5].status == "diverged" and r.trials[5].rungs == {} and r.trials[5].cut_at is None


def test_a_job_a_study_proposes_that_cannot_be_planned_is_refused_and_named_and_the_round_goes_on(tmp_path,
                                                                                                   monkeypatch):
    """A later round is planned as a user's command is, before it is written: a job that cannot run (here a ramp
    on two JAX devices whose built-in batch norm is per replica, and one whose batch shrinks) is left out of it,
    sweep.json names it with the planner's line, the others run, and the same files plan the same round again."""
    from harness.studies.recover import Recover

    sweep = _round_one(tmp_path / "s")
    content = json.loads((sweep / "sweep.json").read_text())
    b_job = content["jobs"][0]["overrides"]
    proposed = [(b_job + ["batch_schedule=[[0,8],[1,4]]"], "shrinks"), (b_job + ["lr_factor=2.0"], "fine"),
                (b_job + ["backend=jax", "gpus=2", "simulate_devices=true", "model.batch_norm=true",
                          "tune_fraction=0.0", "batch_schedule=[[0,8],[1,64]]"], "jax_ramp")]
    monkeypatch.setattr(Recover, "next_round", lambda self, folder, content, round_: proposed if round_ == 2 else None)
    jobs = next_round(sweep, 1)
    assert [(j.job, j.arm) for j in jobs] == [("10", "fine")]
    written = json.loads((sweep / "sweep.json").read_text())
    refused = sweep_file.refused(written)
    assert list(refused) == ["shrinks", "jax_ramp"]
    assert refused["shrinks"].startswith("batch_schedule=[[0, 8], [1, 4]] is not allowed: batches that grow or stay")
    assert "a built-in model with per-replica batch norm" in refused["jax_ramp"]
    assert [r["round"] for r in written["refused"]] == [2, 2]
    assert next_round(sweep, 1) == jobs and json.loads((sweep / "sweep.json").read_text()) == written  # a resume
    other = _round_one(tmp_path / "t")  # a round none of whose jobs can be planned is passed over, as an empty one
    later = {2: proposed[:1], 3: proposed[1:2]}
    monkeypatch.setattr(Recover, "next_round", lambda self, folder, content, round_: later.get(round_))
    assert [(j.job, j.arm, j.round) for j in next_round(other, 1)] == [("10", "fine", 3)]
    assert [r["round"] for r in json.loads((other / "sweep.json").read_text())["refused"]] == [2]


def test_a_round_the_study_cannot_plan_ends_the_study_and_says_why_once(tmp_path, monkeypatch):
    """A ConfigError from the study's own planning ends its rounds there: sweep.json says why (`stopped`), the
    command says it in one line with exit 2 (tests/launch/test_cli.py), and the same files plan nothing more."""
    from harness.fields import ConfigError
    from harness.studies.recover import Recover

    sweep = _round_one(tmp_path / "s")

    def fails(self, folder, content, round_):
        raise ConfigError("recover.space", "lr", "a key this command can search")

    monkeypatch.setattr(Recover, "next_round", fails)
    assert next_round(sweep, 1) == []
    written = json.loads((sweep / "sweep.json").read_text())
    assert written["more_rounds"] is False and written["rounds"] == 1
    assert sweep_file.stopped(written) == ("round 2 could not be planned: recover.space='lr' is not allowed: a key "
                                           "this command can search")
    monkeypatch.setattr(Recover, "next_round", lambda *args: pytest.fail("planned again"))
    assert next_round(sweep, 1) == []
