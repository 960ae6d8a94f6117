"""Seesaw (harness.config.seesaw): each halving of a cosine or linear decay becomes a doubling of the batch at the
nearest epoch, the rate x 1/sqrt 2 instead of / 2, so that the rate over the square root of the batch at each phase's
start is the decaying run's over sqrt(b) there; capped, the halvings left fall on the rate."""
import math

import pytest

from harness.config import ramp, seesaw
from harness.config.overrides import with_recipe

COSINE = ["epochs=10", "lr_schedule=cosine", "batch_size=32", "lr=0.01"]


def _phases(compose, command, found):
    return ramp.plan_run(compose(*with_recipe(command, found)).train, 1, 4000)


@pytest.mark.parametrize("cap,batches", [(None, [32, 64, 128, 512, 4000]), (128, [32, 64, 128, 128, 128])])
def test_at_each_phases_start_lr_over_root_batch_is_the_cosine_runs_over_root_b(compose, cap, batches):
    """Cosine over 10 epochs of 125 steps halves at 5.0, 6.7, 7.7 and 8.4 (8 twice), 8.9, 9.2 and 9.4 (9 three
    times) epochs: the batch doubles there (16x at epoch 9, capped by the 4000 training samples, or by a study's
    B = 128, where the rate takes the halvings left)."""
    found, why = seesaw.recipe(compose(*COSINE), 4000, cap=cap)
    assert why is None and found["lr_schedule"] == "constant" and found["lr_scaling"] == "none"
    planned = _phases(compose, COSINE, found)
    cosine = ramp.plan_run(compose(*COSINE).train, 1, 4000)
    assert [(p.start_epoch, p.plan.global_batch_size) for p in planned.phases] == list(zip([0, 5, 7, 8, 9], batches))
    for phase in planned.phases[1:]:
        assert planned.lr_at(phase.start_step) / math.sqrt(phase.plan.global_batch_size) == pytest.approx(
            cosine.lr_at(phase.start_epoch * 125) / math.sqrt(32), rel=1e-5)
    # within a phase the rate is held (Seesaw's steps); before the first halving it is b's peak
    assert planned.lr_at(0) == planned.lr_at(planned.phases[1].start_step - 1) == pytest.approx(0.01)


def test_a_linear_decay_halves_at_half_three_quarters_and_seven_eighths(compose):
    command = ["epochs=10", "lr_schedule=linear", "batch_size=32"]
    assert seesaw.halvings(compose(*command), 4000, 10) == [(5, 1), (7, 1), (9, 2)]
    found, _ = seesaw.recipe(compose(*command), 4000)
    assert [p.plan.global_batch_size for p in _phases(compose, command, found).phases] == [32, 64, 128, 512]


@pytest.mark.parametrize("shape,said", [("step", "Smith's rule converts its falls"), ("constant", "has none")])
def test_a_step_or_constant_schedule_says_why_not(compose, shape, said):
    found, why = seesaw.recipe(compose(f"lr_schedule={shape}"), 4000)
    assert found is None and why.startswith("a smooth decay (lr_schedule=cosine or linear)") and said in why
