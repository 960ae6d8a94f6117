"""+study=choose's answer from constructed runs whose target.json says when each check ran: the time to the target
is C + r x S from the run timed alone, the answer is the least median time among the batch sizes that reached the
target on every seed, a miss is never averaged in, validation chooses nothing, and without the timing there is no
answer at all."""
import json
import math
import shutil

import numpy as np
import pytest

from harness.assess import sweep as sweep_files
from harness.studies.choose import reading as choice
from harness.studies.choose import timing, words
from tests.helpers.sweeps import next_round, study_sweep

COMMAND = ("+study=choose", "batch_size=8,32,128", "dataset.num_samples=1000", "epochs=2", "seed=0,1,2,3",
           "choose.target=0.5", "choose.rules=[linear]", "choose.lr_grid=[]", "choose.check=false")
# per batch size, seconds a step and the one-time cost of its timed run; steps to the target by seed
RATE = {8: (0.010, 1.0), 32: (0.020, 1.0), 128: (0.070, 1.0)}
STEPS = {8: [400, 420, 380, 400], 32: [120, 110, 130, 120], 128: [20, 22, 21, None]}  # 128: fastest, seed 3 missed


def _write(sweep, job, steps, size, val_acc=0.5, rate=RATE, per_epoch=None, between=0.0, slow=1.0):
    """A target run's target.json, its checks on a clock of `rate` (x `slow`); `per_epoch` steps an epoch: checked
    once an epoch, the harness spending `between` seconds between epochs (counted beside each check)."""
    per_step, one_time = rate[size]
    last = steps if steps is not None else 200
    if per_epoch:
        ends = range(per_epoch, math.ceil(last / per_epoch) * per_epoch + 1, per_epoch)
        checks = [[s, round(slow * (one_time + per_step * s) + between * k, 4), between * k]
                  for k, s in enumerate(ends)]
    else:
        checks = [[int(s), round(slow * (one_time + per_step * int(s)), 4)] for s in np.linspace(5, last, 12).round()]
    (sweep / job / "target.json").write_text(json.dumps({
        "target_tune_acc": 0.5, "steps_to_target": None if steps is None else checks[-1][0],
        "samples_to_target": None if steps is None else checks[-1][0] * size, "target_resolution": 0.05,
        "target_checks": len(checks),
        "seconds_to_target": None if steps is None else checks[-1][1], "check_seconds": 0.1, "check_times": checks,
        "between_epochs_seconds": checks[-1][2] if per_epoch else 0.0,
        "target_check": "epoch" if per_epoch else "steps", "steps_per_epoch": per_epoch or 100,
        "val_acc_at_target": None if steps is None else val_acc}))


def _steps(steps, arm: str, seed: int):
    """A run's steps to the target: its candidate's own (steps["bs8_as_is_x2"]) where given, else its batch size's."""
    name = arm.removeprefix("time_").removeprefix("check_")
    size = int(name.split("_")[0][2:])
    found = steps[arm] if arm in steps else steps[name] if name in steps else steps[size]
    return size, found[seed] if seed < len(found) else found[1]  # the check's own seed: as seed 1 went


def _older(sweep):
    """The sweep as one planned before choose.timing (its settings without it: a line through two timed runs, each
    stopped after 4 epochs)."""
    content = json.loads((sweep / "sweep.json").read_text())
    settings = content["choose"]["settings"]
    settings.pop("timing")
    settings["time_epochs"] = 4
    (sweep / "sweep.json").write_text(json.dumps(content))


def _sweep(tmp_path, steps=STEPS, val=None, timed=True, command=COMMAND, rate=RATE, per_epoch=None, between=0.0,
           slow_check=1.0, slow_timed=None, line=True):
    """The study's rounds with made-up target runs; `per_epoch` ({size: steps an epoch}): the timed and checked runs
    as printed (checked once an epoch, `between` seconds between epochs), the check's clock x `slow_check`, a timed
    run's x `slow_timed[seed]`. `line`: an older sweep's (choose.timing "line")."""
    sweep = study_sweep(tmp_path / "s", *command)
    if line:
        _older(sweep)
    rounds = [job for job in sweep_files.read(sweep).plan["jobs"]]
    arms = sweep_files.read(sweep).plan["choose"]["arms"]
    for job in rounds:
        size, first = _steps(steps, arms[job["job"]], 0)
        _write(sweep, job["job"], first, size, rate=rate)
    done = 1
    while jobs := next_round(sweep, done):
        done = jobs[0].round
        if jobs[0].alone and not timed:  # the timing round planned, none of its runs started yet
            for job in jobs:
                shutil.rmtree(sweep / job.job)
            break
        for job in jobs:
            seed = int(next(o for o in job.overrides if o.startswith("seed=")).split("=")[1])
            size, found = _steps(steps, job.arm, seed)
            slow = slow_check if job.arm.startswith("check_") else (slow_timed or {}).get(seed, 1.0)
            shape = {} if not (per_epoch and job.alone) else {"per_epoch": per_epoch[size], "between": between,
                                                              "slow": slow}
            _write(sweep, job.job, found, size, (val or {}).get(size, 0.5), rate=rate, **shape)
    return sweep


def test_the_line_through_the_checks_gives_the_seconds_a_step_and_the_one_time_cost():
    found = timing.rate([[5, 1.0 + 0.5 + 2.0], [10, 1.0 + 1.0], [20, 1.0 + 2.0], [40, 1.0 + 4.0]])  # a slow first
    assert found.seconds_per_step == pytest.approx(0.1) and found.one_time == pytest.approx(3.5 - 0.5)
    assert found.predicted(100) == pytest.approx(3.0 + 10.0) and found.predicted(math.inf) == math.inf


def test_the_answer_is_the_least_median_time_among_batch_sizes_that_reached_the_target_on_every_seed(tmp_path):
    found = choice.choose(sweep_files.read(_sweep(tmp_path)))
    a = found.answer
    times = {t.size: t.median for t in a.timed}
    # 128's median over its seeds (22 steps, about 2.5 s) is the least, but seed 2 missed: never averaged away
    large = next(t for t in a.timed if t.size == 128)
    assert found.judging == [1, 2, 3] and len(large.times) == 3  # seed 0 chose: it judges nothing
    assert not large.reached_all and math.isinf(large.times[2]) and times[128] < times[32]
    assert a.size == 32 and times[32] == pytest.approx(1.0 + 0.02 * 120, rel=0.02)
    assert times[8] == pytest.approx(1.0 + 0.01 * 400, rel=0.02)
    per_seed = [(1.0 + 0.01 * s8) / (1.0 + 0.02 * s32) for s8, s32 in zip(STEPS[8][1:], STEPS[32][1:])]
    assert a.speedup.value == pytest.approx(np.exp(np.mean(np.log(per_seed))), rel=0.02)
    assert a.speedup.interval.low > 1 and a.speedup.interval.level == 0.95 and a.beats_base
    assert "Batch 128: its best (as_is) missed the target on seed 3; not a candidate for the answer." in \
        choice.words.answer_lines(found)
    assert found.headline.startswith("On ") and "batch 32" in found.headline


def test_validation_chooses_nothing(tmp_path):
    """Batch 8's validation at the target far above 32's changes the sentence about it, not the answer."""
    found = choice.choose(sweep_files.read(_sweep(tmp_path, val={8: 0.9, 32: 0.5})))
    assert found.answer.size == 32
    assert "so this answer keeps the tuning accuracy but not the validation accuracy" in " ".join(
        choice.words.answer_lines(found))


def test_without_the_timing_there_is_no_answer(tmp_path):
    found = choice.choose(sweep_files.read(_sweep(tmp_path, timed=False)))
    assert found.answer is None and found.rates == {}
    assert "no batch size has been timed on this machine yet" in found.headline


def test_a_candidate_that_wins_only_on_the_seed_that_chose_it_is_not_called_faster(tmp_path):
    """Batch 32 took a quarter of batch 8's time on seed 0, which chose it, and a hair less on seeds 1 and 2 (4.88 s
    and 4.96 s against 5 s). Judged with the choosing seed (every per-seed ratio above 1) it read "faster"; judged on
    the seeds that did not choose it, the interval reaches 1: not shown faster, and the page names who chose."""
    rate = {8: (0.010, 1.0), 32: (0.040, 1.0), 128: (0.070, 1.0)}
    steps = {8: [400, 400, 400], 32: [20, 97, 99], 128: [None, None, None]}
    command = tuple(c.replace("seed=0,1,2,3", "seed=0,1,2") for c in COMMAND)
    found = choice.choose(sweep_files.read(_sweep(tmp_path, steps, command=command, rate=rate)))
    a = found.answer
    assert a.size == 32 and found.judging == [1, 2] and not a.beats_base
    assert a.speedup.interval.low < 1 < a.speedup.interval.high
    assert "the interval reaches 1, so it is not shown faster" in found.headline
    lines = choice.words.answer_lines(found)
    assert any(line.startswith("Seed 0 chose each batch size's candidate; seeds 1, 2 judged them") for line in lines)
    assert "Batch 128: no candidate reached the target on seed 0, the seed that chooses; not a candidate for the " \
           "answer." in lines
    written = found.as_json()
    assert written["chose"] == [0] and written["seeds"] == [1, 2] and written["answer"]["speedup"]["n"] == 2


def test_with_no_answer_the_headline_names_each_batch_sizes_reason(tmp_path):
    """Batch 8 as it is missed on seed 2 (a seed that judges), no candidate at 32 reached the target on seed 0 (the
    seed that chooses), and 128's best missed on seed 3: no batch size can be recommended, each said with its own
    reason, and no infinite speed-up printed."""
    steps = {8: [400, 420, None, 400], 32: [None, 110, 130, 120], 128: [20, 22, 21, None]}
    found = choice.choose(sweep_files.read(_sweep(tmp_path, steps)))
    assert found.answer is None
    assert found.headline == ("No batch size can be recommended for tune_acc 0.5: batch 8 its best (as_is) missed "
                              "the target on seed 2; batch 32 no candidate reached the target on seed 0, the seed "
                              "that chooses; batch 128 its best (as_is) missed the target on seed 3.")
    assert "inf" not in " ".join([found.headline, *choice.words.answer_lines(found)])
    assert found.as_json()["left_out"] == {"8": "its best (as_is) missed the target on seed 2",
                                           "32": "no candidate reached the target on seed 0, the seed that chooses",
                                           "128": "its best (as_is) missed the target on seed 3"}


def test_the_speed_up_against_b_at_its_own_best_and_a_best_at_its_grids_edge(tmp_path):
    """Batch 8's grid (lr x2) beats it as it is: the headline gives the answer's speed-up against both, and says
    that b's best sits at its grid's edge (tuned only partly: a step further was not tried)."""
    command = tuple(c.replace("choose.lr_grid=[]", "choose.lr_grid=[2.0]") for c in COMMAND)
    steps = {**STEPS, "bs8_as_is_x2": [300, 310, 290, 300]}
    found = choice.choose(sweep_files.read(_sweep(tmp_path, steps, command=command)))
    a = found.answer
    assert a.size == 32 and a.own is not None and a.own.candidate.name == "as_is_x2"
    own = [(1.0 + 0.01 * s8) / (1.0 + 0.02 * s32) for s8, s32 in zip([310, 290, 300], STEPS[32][1:])]
    assert a.own_speedup.value == pytest.approx(np.exp(np.mean(np.log(own))), rel=0.02)
    assert a.own_speedup.value < a.speedup.value
    assert "; against batch 8 at its own best (your command, its learning rate x2" in found.headline
    assert "(tuned only partly: its best is its grid's edge, lr x2)" in found.headline
    assert found.as_json()["answer"]["own_speedup"]["candidate"] == "as_is_x2"


PER_EPOCH = {8: 100, 32: 25, 128: 7}
CHECKED = tuple(c.replace("choose.check=false", "choose.check=true") for c in COMMAND)


def test_the_time_is_the_printed_commands_and_its_check_can_fail(tmp_path):
    """Timed as printed (its target checked once an epoch, 5 s between epochs for the harness's measurements): r and C
    leave those seconds out, a seed's steps round up to its epoch's end, and the command printed is the one timed.
    A rerun 50% slower than its prediction makes the headline say the time is uncertain; one as predicted does not."""
    found = choice.choose(sweep_files.read(_sweep(tmp_path / "a", command=CHECKED, per_epoch=PER_EPOCH, between=5.0,
                                                  slow_check=1.5)))
    a = found.answer
    assert a.size == 32 and a.best.runs == 2
    assert a.best.seconds_per_step == pytest.approx(0.02) and a.best.one_time == pytest.approx(1.0)
    assert a.best.times.tolist() == pytest.approx([1.0 + 0.02 * 125, 1.0 + 0.02 * 150, 1.0 + 0.02 * 125])  # 110 -> 125
    for key in ("target_check=epoch", "target_tune_acc=0.5", "tune_fraction=0.1", "probes=false", "batch_size=32"):
        assert key in found.command.split()
    assert not any(word in found.command for word in ("study=", "seed=", "choose.", "hydra.", "target_max_samples"))
    timed_jobs = [job for job in sweep_files.read(tmp_path / "a" / "s").plan["jobs"] if (job.get("arm") or "").startswith("time_")]
    assert all(any(o.startswith("target_max_samples=") for o in job["overrides"]) for job in timed_jobs)  # 4 epochs
    assert [(c.size, c.seed, c.within) for c in found.checks] == [(32, 3, False), (8, 3, False)]
    assert found.headline.endswith("took 50% longer than predicted (more than the 25% the check allows): the time "
                                   "is uncertain on this machine.")
    assert found.as_json()["uncertain"] is True
    steady = choice.choose(sweep_files.read(_sweep(tmp_path / "b", command=CHECKED, per_epoch=PER_EPOCH,
                                                   between=5.0, slow_timed={1: 0.95, 2: 1.05})))
    assert all(c.within for c in steady.checks) and "uncertain" not in steady.headline
    # the timed runs spread 10% apart on every command: a rerun at their mean falls inside its prediction interval
    check = steady.checks[0]
    assert check.interval.level == 0.95 and check.interval.n == 3 and check.inside  # 8, 32 and 128 timed twice
    assert check.interval.low < 0.9 * check.predicted and check.interval.high > 1.1 * check.predicted
    assert "(+0%: within the 25% the check allows; inside its 95% prediction interval [" in " ".join(
        choice.words.answer_lines(steady))
    assert not found.checks[0].inside  # 50% slower: outside it too


def test_seeds_added_run_b_as_it_is_and_each_finalist_alone_as_printed_and_the_answer_reads_their_times(tmp_path):
    """python -m harness.resume SWEEP --add-seeds 1 on a finished choice: b as it is and every batch size's best run
    on the new seed as the confirmation ran them (stopped at the target already set, as printed and alone: each run's
    own seconds are the new seed's time); the answer's times and speed-up then read the seeds that judged and the new
    one."""
    from tests.helpers.sweeps import add_seeds

    sweep = _sweep(tmp_path, line=False)
    before = choice.choose(sweep_files.read(sweep))
    added = add_seeds(sweep, 1)
    assert sorted(job.arm for job in added) == ["bs128_as_is", "bs32_as_is", "bs8_as_is"]
    assert all("seed=4" in job.overrides and "target_tune_acc=0.5" in job.overrides and "target_check=epoch" in
               job.overrides and job.alone for job in added)
    for job, steps in zip(added, [410, 125, 23]):
        _write(sweep, job.job, steps, int(job.arm.split("_")[0][2:]))
    found = choice.choose(sweep_files.read(sweep))
    assert found.judging == [1, 2, 3, 4] and found.choosing == [0] and found.target == before.target
    assert [len(t.times) for t in found.answer.timed] == [4, 4, 4] and found.answer.speedup.interval.n == 4
    assert next(t for t in found.answer.timed if t.size == 32).times[-1] == pytest.approx(1.0 + 0.02 * 125)
    assert found.answer.size == before.answer.size == 32
    # the resume that runs them plans the study's rounds again from the same files: none changes
    _assert_resumed_plans_the_same(sweep, COMMAND)


def _assert_resumed_plans_the_same(sweep, command):
    """A resume of `command` (its sweep.json written again, then each round planned from the files): every job as
    it was, with the same numbers."""
    import dataclasses

    from tests.helpers.sweeps import _command_plan

    planned = json.loads((sweep / "sweep.json").read_text())["jobs"]
    dataclasses.replace(_command_plan(command), output_dir=sweep).write()
    done = 1
    while later := next_round(sweep, done):
        done = later[0].round
    assert json.loads((sweep / "sweep.json").read_text())["jobs"] == planned


def test_seeds_added_that_move_the_answer_leave_every_round_as_it_was_planned_and_the_new_answer_unchecked(tmp_path):
    """The new seed's runs move the answer (batch 32 misses the target there, so it no longer reached it on every
    seed that judges), yet a resume plans the study's rounds from the same files as before, the check round (which
    reran the answer before) included: the seeds added are judged, they plan nothing, and the page says the new
    answer was not checked."""
    from tests.helpers.sweeps import add_seeds

    steps = {**STEPS, 128: [40, 40, 40, 40]}  # 128 reaches the target on every seed, slower than 32
    sweep = _sweep(tmp_path, steps, command=CHECKED, per_epoch=PER_EPOCH, line=False)
    assert choice.choose(sweep_files.read(sweep)).answer.size == 32
    for job in add_seeds(sweep, 1):
        assert "seed=5" in job.overrides  # after the check's seed 4
        size = int(job.arm.split("_")[0][2:])
        _write(sweep, job.job, None if size == 32 else steps[size][1], size)
    found = choice.choose(sweep_files.read(sweep))
    assert found.answer.size == 128  # what the page now reads
    assert found.headline.endswith("The answer changed once seeds were added after the check, which reran batch 32 "
                                   "(as is): this answer was not checked.")  # nor b, which it reran beside
    assert found.as_json()["answer_checked"] is False
    _assert_resumed_plans_the_same(sweep, CHECKED)


def _jobs(sweep, prefix=""):
    """The plan's jobs whose arm starts with `prefix`."""
    return [job for job in sweep_files.read(sweep).plan["jobs"] if (job.get("arm") or "").startswith(prefix)]


def test_each_judging_seeds_time_is_what_its_own_run_of_the_printed_command_recorded(tmp_path):
    """The confirmation is the timing: each best (and b as it is) runs on each judging seed as printed (its target
    checked once an epoch) and alone, and that run's seconds_to_target, as its target.json records them with every
    second between epochs (0.5 s here), is the seed's time; no timing round, no line."""
    sweep = _sweep(tmp_path, command=CHECKED, per_epoch=PER_EPOCH, between=0.5, line=False)
    found = choice.choose(sweep_files.read(sweep))
    a = found.answer
    assert not _jobs(sweep, "time_") and found.rates == {}
    for t in a.timed:
        for seed, seconds in zip(found.judging, t.times):
            written = json.loads((sweep / t.candidate.jobs[seed] / "target.json").read_text())["seconds_to_target"]
            assert seconds == (math.inf if written is None else written)  # what the run recorded (None: a miss)
    confirm = [job for job in _jobs(sweep, "bs") if job["round"] > 1]
    assert confirm and all(job["alone"] and "target_check=epoch" in job["overrides"] for job in confirm)
    # batch 32 crossed at 110-130 steps, checked at the end of epochs of 25 steps, 0.5 s between each two
    assert a.size == 32 and a.best.times.tolist() == pytest.approx([1.0 + 0.02 * 125 + 0.5 * 4,
                                                                    1.0 + 0.02 * 150 + 0.5 * 5,
                                                                    1.0 + 0.02 * 125 + 0.5 * 4])
    assert "target_check=epoch" in found.command.split() and "seed=" not in found.command
    assert "its first compiled call and every second between epochs included" in found.as_json()["formula"]


def test_the_check_reruns_the_answer_on_a_seed_that_neither_chose_nor_judged_inside_its_prediction(tmp_path):
    """The check runs the answer and b as it is on seed 4 (the command's seeds are 0-3), alone, as printed; its
    prediction is the judging seeds' geometric mean, its interval a t prediction interval on their logs; a rerun as
    they went lands inside it and within the tolerance."""
    sweep = _sweep(tmp_path, command=CHECKED, per_epoch=PER_EPOCH, line=False)
    found = choice.choose(sweep_files.read(sweep))
    checks = _jobs(sweep, "check_")
    assert [(job["arm"], job["alone"], "seed=4" in job["overrides"]) for job in checks] == [
        ("check_bs32_as_is", True, True), ("check_bs8_as_is", True, True)]
    check = found.checks[0]
    times = found.answer.best.times
    assert check.predicted == pytest.approx(float(np.exp(np.log(times).mean())))
    assert check.interval.level == 0.95 and check.interval.n == 3 and check.interval.method == "new-run prediction t"
    assert check.inside and check.within and not check.fails and "uncertain" not in found.headline
    assert found.as_json()["uncertain"] is False and found.as_json()["answer_checked"] is True


def test_a_check_that_misses_the_target_makes_the_time_uncertain(tmp_path):
    """A rerun of the printed command that misses the target has no time: the headline says the time is uncertain,
    never silent."""
    steps = {**STEPS, "check_bs32_as_is": [None] * 5}
    sweep = _sweep(tmp_path, steps, command=CHECKED, per_epoch=PER_EPOCH, line=False)
    found = choice.choose(sweep_files.read(sweep))
    check = next(c for c in found.checks if c.size == 32)
    assert check.measured is None and check.outcome == "missed" and check.fails
    assert found.headline.endswith("The rerun of the printed command at batch 32 on seed 4 missed the target: the time "
                                   "is uncertain on this machine.")
    assert "missed the target: no time to compare, so the time is uncertain." in " ".join(
        choice.words.answer_lines(found))


def test_when_the_answer_is_b_as_it_is_its_failing_check_still_says_uncertain(tmp_path):
    """No larger batch beats b as it is, and its rerun takes half again its prediction: the headline that says so
    carries the check's words too (it returned before them)."""
    steps = {8: [400, 400, 400, 400], 32: [None] * 4, 128: [None] * 4}
    sweep = _sweep(tmp_path, steps, command=CHECKED, per_epoch=PER_EPOCH, slow_check=1.5, line=False)
    found = choice.choose(sweep_files.read(sweep))
    assert found.answer.best is found.answer.base
    assert [(c.size, c.name, c.seed) for c in found.checks] == [(8, "as_is", 4)]
    assert found.headline.startswith("On ") and "no batch size reaches tune_acc 0.5 sooner than batch 8" in \
        found.headline
    assert found.headline.endswith("took 50% longer than predicted (more than the 25% the check allows): the time "
                                   "is uncertain on this machine.")


def test_an_answer_that_loses_validation_accuracy_says_so_in_its_headline(tmp_path):
    """Batch 32 reaches the tuning target soonest but validates 0.1 below batch 8 as it is (choose.tolerance 0.01):
    the headline says so beside the speed-up, not only a line further down; within the tolerance it says nothing."""
    sweep = _sweep(tmp_path / "a", val={8: 0.6, 32: 0.5}, command=CHECKED, per_epoch=PER_EPOCH, line=False)
    found = choice.choose(sweep_files.read(sweep))
    assert found.answer.size == 32
    assert ("But its validation accuracy at the target is 0.100 below batch 8's (0.500 against 0.600), more than "
            "choose.tolerance 0.01: it keeps the tuning accuracy, not the validation accuracy.") in found.headline
    kept = choice.choose(sweep_files.read(_sweep(tmp_path / "b", val={8: 0.505, 32: 0.5}, command=CHECKED,
                                                 per_epoch=PER_EPOCH, line=False)))
    assert "validation accuracy" not in kept.headline
    assert "(within choose.tolerance 0.01)" in choice.words.validation_text(kept)


def test_the_page_asks_the_studys_question_and_its_verdict_box_holds_five_lines_at_most(tmp_path):
    """The page's title is the study's own question; the verdict box holds the answer with its speed-ups, the
    printed command, the validation accuracy against b's and the check; the method, the batch sizes left out, the
    ramps and the check's detail come below, under headings of their own."""
    from harness.report import html as report
    from tests.helpers import page

    sweep = _sweep(tmp_path, command=CHECKED, per_epoch=PER_EPOCH, line=False)
    parsed = page.parse(report.build_report(sweep))
    assert page.text(parsed.find("h1")).endswith(": which batch size reaches my accuracy soonest on this machine?")
    box = parsed.find("div", id="choose")
    items = box.find_all("li")
    assert len(items) + len(box.find_all("pre")) + 1 <= 5  # the headline, the command and the lines
    said = page.text(box)
    assert "reaches tune_acc 0.5 soonest" in said and "x as fast [" in said and "python -m harness" in said
    assert "Validation accuracy where the target was reached" in said and "Rerun alone on seed 4 as printed" in said
    headings = [page.text(h3) for h3 in parsed.find_all("h3")]
    assert {"How the answer was found", "Every batch size", "The check", "Every candidate"} <= set(headings)


def test_a_ratio_below_1_whose_interval_reaches_1_is_not_shown_slower_and_says_what_more_seeds_would_show():
    """A ramp's time against the fastest single batch size leans slower (0.55x) with an interval that reaches 1:
    not shown slower, and the seeds that would show it are seeds that would show it slower, never faster."""
    from harness.assess import intervals

    ratio = intervals.paired_ratio([1.0, 0.5, 2.1], [2.0, 2.0, 2.0])
    said = words.ratio_text(ratio)
    assert ratio.value < 1 and ratio.interval.low < 1 < ratio.interval.high
    assert ": the interval reaches 1, so it is not shown slower" in said and "shown faster" not in said
