"""+study=choose's answer from constructed runs whose target.json says when each check ran: the time to the target
is C + r x S from the run timed alone, the answer is the least median time among the batch sizes that reached the
target on every seed, a miss is never averaged in, validation chooses nothing, and without the timing there is no
answer at all."""
import json
import math

import numpy as np
import pytest

from harness.assess import sweep as sweep_files
from harness.studies.choose import reading as choice
from harness.studies.choose import timing
from tests.helpers.sweeps import next_round, study_sweep

COMMAND = ("+study=choose", "batch_size=8,32,128", "dataset.num_samples=1000", "epochs=2", "seed=0,1,2",
           "choose.target=0.5", "choose.rules=[linear]", "choose.lr_grid=[]", "choose.check=false")
# per batch size, seconds a step and the one-time cost of its timed run; steps to the target by seed
RATE = {8: (0.010, 1.0), 32: (0.020, 1.0), 128: (0.070, 1.0)}
STEPS = {8: [400, 420, 380], 32: [120, 110, 130], 128: [20, 22, None]}  # 128: fastest, but seed 2 missed


def _write(sweep, job, steps, size, val_acc=0.5):
    per_step, one_time = RATE[size]
    last = steps if steps is not None else 200
    checks = [[int(s), round(one_time + per_step * int(s), 4)] for s in np.linspace(5, last, 12).round()]
    (sweep / job / "target.json").write_text(json.dumps({
        "target_tune_acc": 0.5, "steps_to_target": steps, "samples_to_target": None, "target_resolution": 0.05,
        "target_checks": len(checks), "seconds_to_target": None if steps is None else checks[-1][1],
        "check_seconds": 0.1, "check_times": checks, "val_acc_at_target": None if steps is None else val_acc}))


def _sweep(tmp_path, steps=STEPS, val=None, timed=True):
    sweep = study_sweep(tmp_path / "s", *COMMAND)
    rounds = [job for job in sweep_files.read(sweep).plan["jobs"]]
    arms = sweep_files.read(sweep).plan["choose"]["arms"]
    for job in rounds:
        size = int(arms[job["job"]].split("_")[0][2:])
        _write(sweep, job["job"], steps[size][0], size)
    done = 1
    while jobs := next_round(sweep, done):
        done = jobs[0].round
        if jobs[0].alone and not timed:
            break
        for job in jobs:
            size, seed = int(job.arm.split("bs")[1].split("_")[0]), int(job.overrides[0].split("=")[1])
            _write(sweep, job.job, steps[size][seed], size, (val or {}).get(size, 0.5))
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
    assert not large.reached_all and math.isinf(large.times[2]) and times[128] < times[32]
    assert a.size == 32 and times[32] == pytest.approx(1.0 + 0.02 * 120, rel=0.02)
    assert times[8] == pytest.approx(1.0 + 0.01 * 400, rel=0.02)
    per_seed = [(1.0 + 0.01 * s8) / (1.0 + 0.02 * s32) for s8, s32 in zip(STEPS[8], STEPS[32])]
    assert a.speedup.value == pytest.approx(np.exp(np.mean(np.log(per_seed))), rel=0.02)
    assert a.speedup.interval.low > 1 and a.speedup.interval.level == 0.95 and a.beats_base
    assert "missed the target on seed 2" in " ".join(choice.words.answer_lines(found))
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
