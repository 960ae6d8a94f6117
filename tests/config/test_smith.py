"""Smith's rule (harness.config.smith): a step schedule's tenfold falls become tenfold batches at the same epochs,
capped by the training set or a study's largest batch, what the cap leaves of a fall a fall of the rate (lr / batch
falls tenfold at each fall, as the decaying run's does); a smooth decay or a constant rate says why not."""
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
    """lr_factor=0.75 under the linear rule at batch 64 over a base of 32: b's peak is 1.5 x lr, held until the
    training set caps the batch (4000 of the 6400 the second fall asks: the rate falls the 1.6 the cap leaves)."""
    found, _ = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=64", "lr_scaling=linear",
                                    "base_batch_size=32", "lr_factor=0.75"), 4000)
    assert found["lr_factor"] == 1.5 and found["batch_schedule"] == "[[0,64,1.5],[4,640,1.5],[6,4000,0.9375]]"


def test_a_batch_the_training_set_caps_gives_the_rest_of_its_falls_to_the_rate(compose):
    found, _ = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=512"), 4000)
    assert found["batch_schedule"] == "[[0,512,1],[4,4000,0.78125],[6,4000,0.078125]]"
    none, why = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=4000"), 4000)
    assert none is None and why == "room for a larger batch: batch 4000 is at its cap already, the 4000 training samples"
    capped, _ = smith.recipe(compose("epochs=8", "lr_schedule=step", "batch_size=32"), 4000, cap=128)
    assert capped["batch_schedule"] == "[[0,32,1],[4,128,0.4],[6,128,0.04]]"  # +study=recover's B caps it


# b = 8, lr 0.01, epochs 5 (falls at 2.5 and 3.75: epochs 2 and 4), 4000 samples: by hand, each epoch's (batch, lr)
BY_HAND = {64: [(8, 0.01), (8, 0.01), (64, 0.008), (64, 0.008), (64, 0.0008)],     # x8 of the first x10: lr / 1.25
           800: [(8, 0.01), (8, 0.01), (80, 0.01), (80, 0.01), (800, 0.01)]}       # both falls whole batches
STEPPED = [0.01, 0.01, 0.01, 0.001, 0.0001]  # the step run's rate at each epoch's start (its falls at 2.5, 3.75)


@pytest.mark.parametrize("cap", sorted(BY_HAND))
def test_smiths_ramp_by_hand_lr_over_batch_falls_tenfold_at_each_fall_up_to_the_cap_and_after(compose, cap):
    """Before: a cap of 64 gave [[0,8],[2,64]]: lr / batch fell 8x where the step decay falls 100x."""
    command = ["epochs=5", "lr_schedule=step", "batch_size=8", "lr=0.01"]
    found, why = smith.recipe(compose(*command), 4000, cap=cap)
    assert why is None
    planned = ramp.plan_run(compose(*with_recipe(command, found)).train, 1, 4000)
    at = [planned.phases[planned.phase_of_epoch(e)] for e in range(5)]
    assert [(p.plan.global_batch_size, planned.lr_at(p.start_step + (e - p.start_epoch) * p.plan.steps_per_epoch))
            for e, p in enumerate(at)] == [(b, pytest.approx(lr)) for b, lr in BY_HAND[cap]]
    noise = [lr / b for b, lr in BY_HAND[cap]]
    assert noise[-1] == pytest.approx(noise[0] / 100)  # the step run's 100x, as its rate over b: 0.01 / 8 to 0.0001 / 8
    assert STEPPED[-1] / 8 == pytest.approx(noise[-1])


@pytest.mark.parametrize("epochs,expected", [(3, [(1, 10), (2, 10)]), (2, [(1, 100)]), (16, [(8, 10), (12, 10)]),
                                             (5, [(2, 10), (4, 10)]), (1, [])])
def test_each_fall_is_at_the_whole_epoch_nearest_it_and_two_on_one_epoch_are_one(epochs, expected):
    """Half to even put both of epochs=3's falls on epoch 2, and one was lost."""
    assert smith.falls(epochs) == expected


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
