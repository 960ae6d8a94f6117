"""+study=choose's plan and rounds from real commands (harness.launch.cli.plan_command), their runs constructed
(tests/helpers/sweeps.py) with the target runs' target.json written here: the baseline sets the target, every batch
size gets the command and the rules, the grid goes around each one's leader, and the confirmation runs each one's
best (never a candidate that missed) on the other seeds."""
import json

import pytest

from harness.assess import sweep as sweep_files
from harness.launch.cli import main, plan_command
from harness.studies.choose import reading as choice
from harness.studies.choose.settings import recorded
from tests.helpers.sweeps import next_round, set_final, study_sweep

COMMAND = ("+study=choose", "batch_size=8,64", "dataset.num_samples=1000", "epochs=2", "seed=0,1")


def _plan(*overrides):
    return plan_command(["+study=choose", *overrides], multirun=True)


def test_round_one_is_the_baseline_b_as_it_is_on_every_seed_and_the_candidates_are_planned():
    plan = _plan("batch_size=8,32,128", "epochs=4", "seed=0,1,2")
    record = plan.study["choose"]
    assert [job for job in plan.jobs] == [list(record["points"]["8"][str(seed)]) for seed in (0, 1, 2)]
    assert set(record["arms"].values()) == {"baseline"}
    assert record["max_epochs"] == 12 and record["target"] is None and record["lr_factor"] == 1.0
    assert all(cfg.train.tune_fraction == 0.1 and not cfg.train.probes and cfg.train.target_tune_acc is None
               for cfg in plan.run_configs)
    names = {size: [c["name"] for c in listed] for size, listed in record["candidates"].items()}
    assert names == {"8": ["as_is", "linear"], "32": ["as_is", "linear", "sqrt", "adam_sde"],
                     "128": ["as_is", "linear", "sqrt", "adam_sde"]}  # convnet without batch norm: no precise_bn
    # at b, each rule that changes anything at ratio 1: the linear rule's warm-up (sqrt's is the same recipe there,
    # adam_sde's coefficients are Adam's own): b at its best has what every larger batch size has
    assert record["candidates"]["8"][1]["recipe"] == {"lr_factor": 1.0, "warmup_epochs": 0.8}
    assert record["rules_left_out"] == {"precise_bn": "a model with batch norm, and this one has none"}
    linear = record["candidates"]["128"][1]["recipe"]
    assert linear == {"lr_factor": 16.0, "warmup_epochs": 0.8}  # x 128/8, warm-up min(5, E/5)


def test_a_target_given_skips_the_baseline():
    plan = _plan("batch_size=8,64", "epochs=2", "seed=0,1", "choose.target=0.5")
    jobs = [" ".join(job) for job in plan.jobs]
    assert len(jobs) == 2 + 4 and all("target_tune_acc=0.5" in job and "epochs=6" in job for job in jobs)
    assert all(job.count("seed=0") == 1 for job in jobs)  # the candidates run on the first seed only
    assert sorted(plan.study["choose"]["arms"].values()) == ["bs64_adam_sde", "bs64_as_is", "bs64_linear",
                                                            "bs64_sqrt", "bs8_as_is", "bs8_linear"]


def _target(sweep, job: str, steps, stopped_at: int | None = None):
    """A target run's target.json: `steps` to the target, or None for one that missed it (`stopped_at`: stopped
    short there, its target_max_samples)."""
    (sweep / job / "target.json").write_text(json.dumps({
        "target_tune_acc": 0.5, "steps_to_target": steps, "samples_to_target": None if steps is None else steps * 8,
        "target_resolution": 0.05, "target_checks": 10, "seconds_to_target": None if steps is None else steps / 100,
        "check_seconds": 0.1, "check_times": [], "val_acc_at_target": None if steps is None else 0.5,
        **({} if stopped_at is None else {"target_max_samples": stopped_at, "stopped_short": True})}))


def _limit(job) -> int | None:
    """The target_max_samples a planned job stops at (None: none)."""
    found = [int(o.split("=", 1)[1]) for o in job.overrides if o.startswith("target_max_samples=")]
    return found[0] if found else None


def test_the_rounds_go_from_the_baseline_to_the_confirmation_of_each_batch_size_s_best(tmp_path):
    sweep = study_sweep(tmp_path / "s", *COMMAND)
    set_final(sweep, 0, tune_acc=0.62)
    set_final(sweep, 1, tune_acc=0.58)  # the lowest seed: the target is 0.58 - 0.01
    candidates = next_round(sweep, 1)
    again = next_round(sweep, 1)  # a resumed command plans the same round from the same files: same jobs, same numbers
    assert [(job.job, job.overrides, job.arm) for job in again] == [(job.job, job.overrides, job.arm)
                                                                    for job in candidates]
    found = choice.choose(sweep_files.read(sweep))
    assert found.target == 0.57 and "0.58" in found.target_note
    assert [job.arm for job in candidates] == ["bs8_as_is", "bs8_linear", "bs64_as_is", "bs64_linear", "bs64_sqrt",
                                               "bs64_adam_sde"]
    assert all("target_tune_acc=0.57" in job.overrides and "epochs=6" in job.overrides for job in candidates)
    # at 64 the linear rule is fastest but for one thing: the command as it is missed the target; at 8 the linear
    # rule's warm-up costs steps
    for job, steps in zip(candidates, [300, 320, None, 40, 60, 50]):
        _target(sweep, job.job, steps)
    grid = next_round(sweep, 2)
    assert [job.arm for job in grid] == ["bs8_as_is_x0.5", "bs8_as_is_x2", "bs64_linear_x0.5", "bs64_linear_x2"]
    assert "lr_factor=16.0" in grid[3].overrides  # the linear rule's 8 (the command's lr_factor 1 x 64/8), x 2
    for job, steps in zip(grid, [None, 200, 45, 30]):
        _target(sweep, job.job, steps)
    confirm = next_round(sweep, 3)
    # batch 8's best is lr x2, and b as it is runs beside it on seed 1: the speed-up is over it; each run as the
    # printed command runs (its target checked once an epoch) and alone: what it records is seed 1's time
    assert [(job.arm, "seed=1" in job.overrides, job.alone, "target_check=epoch" in job.overrides)
            for job in confirm] == [("bs8_as_is_x2", True, True, True), ("bs64_linear_x2", True, True, True),
                                    ("bs8_as_is", True, True, True)]
    for job, steps in zip(confirm, [210, 30, 310]):
        _target(sweep, job.job, steps)
    found = choice.choose(sweep_files.read(sweep))
    best = found.leader(64)
    assert best.name == "linear_x2" and best.steps == {0: 30.0, 1: 30.0}
    assert found.answer.size == 64 and found.answer.best.times.tolist() == [0.3]  # its own run's seconds
    assert recorded(sweep_files.read(sweep).plan["choose"]).lr_grid == (0.5, 2.0)
    # the check: the answer and b as it is, as printed and alone, on seed 2 (neither chose nor judged), fixed at round 1
    assert sweep_files.read(sweep).plan["choose"]["check_seed"] == 2
    check = next_round(sweep, 4)
    assert [(job.arm, job.alone, "seed=2" in job.overrides, "target_check=epoch" in job.overrides)
            for job in check] == [("check_bs64_linear_x2", True, True, True), ("check_bs8_as_is", True, True, True)]
    assert next_round(sweep, 5) == []


def test_with_no_tolerance_the_target_is_one_every_seed_of_b_reached_and_the_cap_holds(tmp_path):
    """choose.tolerance=0 and a lowest final tune_acc of 612/700 (0.874286): the target written to 4 digits is 0.8742,
    not 0.8743, which that seed never reached; so b reached it on every seed, and every target run is capped."""
    sweep = study_sweep(tmp_path / "s", *COMMAND, "choose.tolerance=0")
    set_final(sweep, 0, tune_acc=0.9)
    set_final(sweep, 1, tune_acc=612 / 700)
    candidates = next_round(sweep, 1)
    found = choice.choose(sweep_files.read(sweep))
    assert found.target == 0.8742 and found.cap_samples == 4 * found.b_samples
    assert found.target_note.endswith("less choose.tolerance 0 (cut to 0.8742, which every seed reached)")
    assert all("target_tune_acc=0.8742" in job.overrides for job in candidates)
    assert [_limit(job) for job in candidates] == [None] + [found.cap_samples] * 5


def test_grid_points_are_raced_against_their_leader_and_every_run_but_b_as_it_is_is_capped(tmp_path):
    """choose.race_margin and choose.cap_factor: a grid point stops once its samples pass its batch size's leader's
    (on the seed that chooses) by the margin, every target run but b as it is at 4x the samples b needed; a raced-out
    run is neither a miss nor a leader nor confirmed, and the page says where it stopped; a resumed command, whose
    files hold the grid's runs, plans the grid and the confirmation as before."""
    sweep = study_sweep(tmp_path / "s", *COMMAND)
    set_final(sweep, 0, tune_acc=0.62)
    set_final(sweep, 1, tune_acc=0.58)
    candidates = next_round(sweep, 1)
    found = choice.choose(sweep_files.read(sweep))
    assert found.b_samples == 2 * found.train_size and found.cap_samples == 4 * found.b_samples  # reached at epoch 2
    assert [_limit(job) for job in candidates] == [None] + [found.cap_samples] * 5  # b as it is: never capped
    for job, steps in zip(candidates, [300, 320, None, 40, 60, 50]):
        _target(sweep, job.job, steps)
    grid = next_round(sweep, 2)
    # batch 8's leader (as it is) reached at 2400 samples, batch 64's (linear) at 320: each grid point stops 25% past
    assert [_limit(job) for job in grid] == [3000, 3000, 400, 400]
    for job, steps, short in zip(grid, [None, 200, None, 30], [3000, None, 400, None]):
        _target(sweep, job.job, steps, stopped_at=short)
    set_final(sweep, int(grid[0].job), tune_acc=0.99)  # raced out with the highest tune_acc of all: still not a leader
    found = choice.choose(sweep_files.read(sweep))
    raced = next(c for c in found.candidates[8] if c.name == "as_is_x0.5")
    assert raced.raced_out(0) and raced.status[0] == "raced_out" and raced.steps_text(0) == "raced out at 3,000 samples"
    assert found.leader(8).name == "as_is_x2" and found.leader(64).name == "linear_x2"
    assert next(c for c in found.candidates[64] if c.name == "linear_x0.5").steps_text(0) == "raced out at 400 samples"
    from harness.studies.choose import words
    said = " ".join(words.cost_lines(found))
    assert "batch 8 with your command, its learning rate x0.5, at 3,000 samples" in said and "not a miss" in said and f"{found.cap_samples:,}" in said
    assert [(job.job, job.overrides) for job in next_round(sweep, 2)] == [(job.job, job.overrides) for job in grid]
    confirm = next_round(sweep, 3)
    assert [job.arm for job in confirm] == ["bs8_as_is_x2", "bs64_linear_x2", "bs8_as_is"]
    assert [_limit(job) for job in confirm] == [found.cap_samples, found.cap_samples, None]
    for job, steps in zip(confirm, [210, 35, 310]):
        _target(sweep, job.job, steps)
    assert [(job.job, job.overrides) for job in next_round(sweep, 3)] == [(job.job, job.overrides) for job in confirm]


def test_with_no_candidate_at_the_target_a_raced_out_run_is_never_the_leader():
    base = dict(size=64, recipe={}, tune_acc={0: 0.5})
    missed = choice.Candidate(name="as_is", steps={0: float("inf")}, status={0: "completed"}, **base)
    raced = choice.Candidate(name="linear_x2", steps={0: float("inf")}, status={0: "raced_out"},
                             stopped_at={0: 400}, **{**base, "tune_acc": {0: 0.9}})
    reached = choice.Candidate(name="as_is", steps={0: 300.0}, status={0: "completed"}, **{**base, "size": 8})
    found = choice.Choice(0.57, "", [8, 64], [0, 1], {8: [reached], 64: [raced, missed]}, 2)
    assert found.leader(64) is missed and found.best(64) is None
    from harness.studies.choose import section

    # the page marks each batch size's leader: a best, or the closest where none reached the target
    assert [row[:2] for row in section.rows(found)] == [["8", "as_is (its best)"],
                                                       ["64", "as_is (the closest: none reached it)"],
                                                       ["64", "linear_x2"]]


def test_a_batch_size_whose_candidates_all_missed_is_not_confirmed(tmp_path):
    sweep = study_sweep(tmp_path / "s", *COMMAND, "choose.target=0.5")
    plan = sweep_files.read(sweep).plan
    for job in plan["jobs"]:
        _target(sweep, job["job"], 100 if plan["choose"]["arms"][job["job"]] == "bs8_as_is" else None)
    grid = next_round(sweep, 1)
    leader = choice.choose(sweep_files.read(sweep)).leader(64)  # none reached: the closest by final tune_acc
    assert [job.arm for job in grid if job.arm.startswith("bs64")] == [f"bs64_{leader.name}_x0.5",
                                                                       f"bs64_{leader.name}_x2"]
    for job in grid:
        _target(sweep, job.job, None)
    confirm = next_round(sweep, 2)
    assert [job.arm for job in confirm] == ["bs8_as_is"]  # 64 missed everywhere: nothing of it to confirm


BAD = [
    (["+study=choose", "batch_size=64"], "batch_size=64", "two or more batch sizes with +study=choose"),
    (["+study=choose", "batch_size=8,64", "choose.target=1.5"], "choose.target=1.5", "(chance, 1)"),
    (["+study=choose", "batch_size=8,64", "choose.target=0.05"], "choose.target=0.05", "above 0.1 for 10 classes"),
    (["+study=choose", "batch_size=8,64", "choose.max_epochs=0.5"], "choose.max_epochs=0.5", "epochs >= 1"),
    (["+study=choose", "batch_size=8,4096"], "batch_size=4096", "the training-set size 3601"),  # the slice held out
    (["+study=choose", "batch_size=8,64", "target_tune_acc=0.9"], "target_tune_acc='0.9'",
     "left to +study=choose"),
    (["+study=choose", "batch_size=8,64", "choose.lr_grid=[1.0]"], "choose.lr_grid=[1.0]", "other than 1"),
    (["+study=choose", "batch_size=8,64", "choose.rules=[lars]"], "choose.rules=['lars']", "distinct rules"),
    (["+study=choose", "batch_size=8,64", "choose.race_margin=-0.1"], "choose.race_margin=-0.1", "a number >= 0"),
    (["+study=choose", "batch_size=8,64", "choose.cap_factor=0.5"], "choose.cap_factor=0.5", "a number >= 1"),
    (["+study=choose", "batch_size=8,64", "choose.time_epochs=4"], "choose.time_epochs=4", "unknown key"),
    (["+study=choose", "batch_size=8,64", "choose.timing=line"], "choose.timing='line'", "measured"),
    (["+study=choose", "batch_size=8,64", "choose.ramp_min_gain=1.5"], "choose.ramp_min_gain=1.5", "in [0, 1)"),
    (["+study=choose", "batch_size=8,64", "batch_schedule=[[0,64],[2,8]]"], "batch_schedule=", "grow or stay"),
]


@pytest.mark.parametrize("argv,named,allowed", BAD, ids=[" ".join(b[0][1:]) for b in BAD])
def test_a_command_that_cannot_be_timed_is_refused_in_one_line_before_anything_runs(argv, named, allowed, capsys,
                                                                                  tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "-m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err and allowed in err, err
    assert list(tmp_path.iterdir()) == []
