"""Smith's rule (harness.config.smith): a step schedule's tenfold falls become tenfold batches at the same epochs,
capped by the training set, b's peak learning rate held; a smooth decay or a constant rate says why not."""
import pytest

from harness.config import ramp, smith
from harness.config.overrides import with_recipe


def test_each_tenfold_fall_becomes_a_tenfold_batch_at_the_nearest_epoch_and_the_rate_is_held(compose):
    command = ["epochs=16", "lr_schedule=step", "batch_size=32", "lr=0.01"]
    found, why = smith.recipe(compose(*command), 4000)
    assert why is None and found == {"batch_schedule": "[[0,32],[8,320],[12,3200]]", "lr_schedule": "constant",
                                     "lr_scaling": "none", "lr_factor": 1.0}
    converted = compose(*with_recipe(command, found))
    planned = ramp.plan_run(converted.train, 1, 4000)
    stepped = ramp.plan_run(compose(*command).train, 1, 4000)
    assert [p.start_epoch for p in planned.phases] == [0, 8, 12]
    # the decaying run's rate falls at its steps' half and three quarters, the ramp's batch grows there instead
    assert stepped.lr_at(stepped.schedule.planned_steps // 2) == pytest.approx(0.001)
    assert [planned.lr_at(step) for step in range(planned.schedule.planned_steps)] == pytest.approx(
        [0.01] * planned.schedule.planned_steps)


def test_the_rate_held_is_bs_own_peak_under_its_lr_scaling(compose):
    found, _ = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=64", "lr_scaling=linear",
                                    "base_batch_size=32", "lr_factor=0.5"), 4000)
    assert found["lr_factor"] == 1.0 and found["batch_schedule"] == "[[0,64],[4,640],[6,4000]]"  # capped at 4000


def test_a_batch_the_training_set_caps_drops_the_phase_that_cannot_grow(compose):
    found, _ = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=512"), 4000)
    assert found["batch_schedule"] == "[[0,512],[4,4000]]"
    none, why = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=4000"), 4000)
    assert none is None and why == "room for a larger batch: batch 4000 is at its cap already, the 4000 training samples"
    capped, _ = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=32"), 4000, cap=128)
    assert capped["batch_schedule"] == "[[0,32],[4,128]]"  # +study=recover's B caps it


@pytest.mark.parametrize("shape,said", [("cosine", "decays smoothly, with no fall to turn into a batch"),
                                        ("linear", "decays smoothly"), ("constant", "has no fall to turn into")])
def test_a_smooth_decay_or_a_constant_rate_says_why_not(compose, shape, said):
    found, why = smith.recipe(compose(f"lr_schedule={shape}"), 4000)
    assert found is None and why.startswith("a step schedule (lr_schedule=step)") and said in why


def test_a_ramp_the_commands_settings_cannot_run_is_refused_with_the_planners_line(compose):
    """steps_per_execution=5 divides batch 32's 125 steps an epoch, not batch 320's 13: the run Smith's recipe made
    would have been refused as its study's round composed it (exit 1); the rule says why instead."""
    found, why = smith.recipe(compose("epochs=16", "lr_schedule=step", "batch_size=32", "steps_per_execution=5"), 4000)
    assert found is None and why.startswith("phases this command can run (batch_schedule=[[0, 32], [8, 320], [12, "
                                            "3200]] is not allowed: phase 2's batch 320 fails steps_per_execution's")
    found, why = smith.recipe(compose("epochs=16", "lr_schedule=step", "batch_size=32", "steps_per_execution=5"), 4000,
                              run_as={"target_tune_acc": 0.9, "target_check": "epoch", "steps_per_execution": 0})
    assert why is None and found["batch_schedule"] == "[[0,32],[8,320],[12,3200]]"
