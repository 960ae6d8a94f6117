"""A run's phases (harness.config.ramp): each phase's batch plan, its learning rate by the run's lr_scaling from the
first phase's batch, samples and steps counted across phases, the decay planned over samples, the EMA rule."""
import dataclasses

import pytest

from harness.config import ramp
from harness.fields import ConfigError


def _planned(compose, *overrides, train_size=4000, replicas=1, backend="tensorflow"):
    return ramp.plan_run(compose(*overrides).train, replicas, train_size, backend)


def test_each_phase_has_its_own_plan_and_counts_steps_and_samples_across_phases(compose):
    planned = _planned(compose, "epochs=6", "batch_schedule=[[0,32],[2,128],[5,500]]")
    assert planned.ramp and planned.first.global_batch_size == 32
    assert [(p.start_epoch, p.end_epoch, p.plan.global_batch_size, p.plan.steps_per_epoch) for p in planned.phases] == [
        (0, 2, 32, 125), (2, 5, 128, 32), (5, 6, 500, 8)]
    assert [p.start_step for p in planned.phases] == [0, 250, 346]
    assert planned.schedule.planned_steps == 354 and planned.total_samples == 6 * 4000
    # batch 128's epoch ends in a batch of 4000 - 31 x 128 = 32 samples
    assert planned.samples_seen(250) == 8000 and planned.samples_seen(250 + 31) == 8000 + 31 * 128
    assert planned.samples_seen(250 + 32) == 12000 and planned.samples_seen(354) == 24000
    assert planned.phase_of_epoch(4) == 1 and planned.phase_of_step(346) == 2 and ramp.label(
        compose("batch_schedule=[[0,32],[2,128],[5,500]]").train.batch_schedule) == "32→128→500"


@pytest.mark.parametrize("scaling,factor", [("none", 1.0), ("sqrt", 2.0), ("linear", 4.0)])
def test_the_learning_rate_follows_each_change_by_lr_scaling_from_the_first_phase(compose, scaling, factor):
    """none is Smith et al.'s rule (the rate held while the batch grows), sqrt Adam's, linear Goyal et al.'s."""
    planned = _planned(compose, "epochs=4", "lr=0.01", f"lr_scaling={scaling}", "base_batch_size=32",
                       "batch_schedule=[[0,32],[2,128]]")
    assert planned.phases[0].peak_lr == pytest.approx(0.01)
    assert planned.phases[1].peak_lr == pytest.approx(0.01 * factor)
    assert planned.lr_at(249) == pytest.approx(0.01) and planned.lr_at(250) == pytest.approx(0.01 * factor)


def test_the_warm_up_happens_once_and_a_decay_runs_over_samples_not_steps(compose):
    planned = _planned(compose, "epochs=4", "lr=0.01", "warmup_epochs=1", "lr_schedule=linear",
                       "batch_schedule=[[0,32],[2,400]]")
    assert planned.schedule.warmup_steps == 125
    assert planned.lr_at(0) == pytest.approx(0.01 / 125) and planned.lr_at(124) == pytest.approx(0.01)
    # after the warm-up (4000 samples) the rate falls linearly in samples: 2 epochs of batch 32 take 250 of the
    # run's 270 steps but only half its samples
    warm, last, total = planned.decay_points()
    assert (warm, last, total) == (4000, 16000 - 400, 16000)
    switch = planned.phases[1].start_step
    assert planned.lr_at(switch) == pytest.approx(0.01 * (1 - (8000 - 4000) / (last - 4000)))
    assert planned.lr_at(planned.schedule.planned_steps - 1) == pytest.approx(0.0, abs=1e-12)
    cosine = _planned(compose, "epochs=4", "lr=0.01", "lr_schedule=step", "batch_schedule=[[0,32],[2,400]]")
    assert cosine.lr_at(switch - 1) == pytest.approx(0.01) and cosine.lr_at(switch) == pytest.approx(0.001)
    assert cosine.lr_at(switch + 15) == pytest.approx(0.0001)  # 3/4 of the samples: epoch 3's end


def test_the_batch_norm_momentum_follows_the_ema_rule_at_every_phase(compose):
    planned = _planned(compose, "epochs=4", "batch_schedule=[[0,32],[2,128],[3,4000]]")
    first = planned.phases[0]
    assert ramp.bn_momentum(0.99, first, first) == 0.99
    assert ramp.bn_momentum(0.99, planned.phases[1], first) == pytest.approx(0.99 ** 4, rel=1e-3)
    assert ramp.bn_momentum(0.99, planned.phases[2], first) == 0.5  # 0.99^125, clipped at the rule's floor


def test_on_jax_a_phase_whose_epoch_ends_in_a_batch_that_does_not_split_over_the_devices_is_refused(compose):
    with pytest.raises(ConfigError, match=r"batch_schedule=.*phase 1's batch 32 fails batch_size's rule: a global "
                       r"batch whose epoch ends in a batch that splits evenly over gpus=2 on JAX \(the 4001"):
        _planned(compose, "epochs=4", "batch_schedule=[[0,32],[2,64]]", train_size=4001, replicas=2,
                 backend="jax")
    planned = _planned(compose, "epochs=4", "batch_schedule=[[0,32],[2,64]]", train_size=4002, replicas=2,
                       backend="jax")
    assert [p.plan.per_replica_batch_size for p in planned.phases] == [16, 32]


def test_a_fixed_batch_is_one_phase_with_its_own_schedule(compose):
    planned = _planned(compose, "epochs=3", "lr_schedule=cosine", "batch_size=64")
    assert not planned.ramp and len(planned.phases) == 1 and planned.phases[0].end_epoch == 3
    assert [planned.lr_at(s) for s in (0, 100, 187)] == [planned.schedule.lr_at(s) for s in (0, 100, 187)]


def test_a_phase_with_its_own_lr_factor_has_the_peak_a_fixed_run_at_its_batch_with_that_factor_has(compose):
    """[start, batch, lr_factor]: each batch size's own best learning rate in its phase (+study=choose's proposal),
    whatever lr_scaling gives; the warm-up rises to the first phase's."""
    from harness.config.batching import plan_batches, plan_schedule

    train = compose("epochs=4", "lr=0.01", "lr_scaling=linear", "warmup_epochs=1",
                    "batch_schedule=[[0,32,0.5],[2,128,3]]").train
    planned = ramp.plan_run(train, 1, 4000)
    fixed = [plan_schedule(plan_batches(b, False, 1, 4000), dataclasses.replace(train, batch_schedule=None,
                                                                                 batch_size=b, lr_factor=f)).peak_lr
             for b, f in ((32, 0.5), (128, 3.0))]
    assert [p.peak_lr for p in planned.phases] == pytest.approx(fixed)
    assert fixed == pytest.approx([0.005, 0.12])
    assert planned.lr_at(124) == pytest.approx(0.005)  # the warm-up's end: the first phase's own peak
    assert ramp.column_label("0:32:0.5,2:128:3.0") == "32→128 (after epoch 2)"
    with pytest.raises(ConfigError, match=r"\[start_epoch, batch, lr_factor\] with a factor > 0"):
        compose("epochs=4", "batch_schedule=[[0,32,0],[2,128]]")


def test_a_batch_that_shrinks_or_repeats_without_a_rate_of_its_own_is_refused_naming_batch_schedule(compose):
    with pytest.raises(ConfigError, match=r"^batch_schedule=.* is not allowed: batches that grow or stay: phase 2's "
                       r"batch 32 is below the 128 before it"):
        compose("epochs=4", "batch_schedule=[[0,128],[2,32]]")
    with pytest.raises(ConfigError, match=r"^batch_schedule=.* an lr_factor of its own below that phase's .*phase 2 "
                       r"repeats batch 32"):
        compose("epochs=4", "batch_schedule=[[0,32],[2,32]]")
    with pytest.raises(ConfigError, match="phase 3 repeats batch 128"):  # a repeated rate is no fall
        compose("epochs=6", "batch_schedule=[[0,32],[2,128,2],[4,128,2]]")
    fall = compose("epochs=6", "batch_schedule=[[0,32],[2,128,2],[4,128,0.2]]").train  # Smith's fall after its cap
    planned = ramp.plan_run(fall, 1, 4000)
    assert [p.plan.global_batch_size for p in planned.phases] == [32, 128, 128]
    assert planned.phases[2].peak_lr == pytest.approx(planned.phases[1].peak_lr / 10)


def test_a_batch_size_beside_a_schedule_that_starts_elsewhere_names_both_keys(compose):
    from harness.config.overrides import check_batch_size

    schedule = compose("epochs=4", "batch_schedule=[[0,32],[2,128]]").train.batch_schedule
    with pytest.raises(ConfigError) as err:
        check_batch_size(["batch_size=64", "batch_schedule=[[0,32],[2,128]]"], schedule)
    assert str(err.value) == ("batch_size=64 is not allowed: left out, or 32, beside batch_schedule=[[0, 32], [2, "
                              "128]], which sets the batch of each phase, the first's 32; or a batch_schedule whose "
                              "first phase is at batch 64")


def test_a_proposal_is_planned_as_a_command_is_and_what_cannot_run_says_why_in_the_planners_line(compose):
    from harness.config import proposals

    command = compose("epochs=4", "batch_size=32", "steps_per_execution=5")  # 125 steps an epoch: 5 divides them
    assert proposals.why_not(command, 4000, batch_schedule=[[0, 32], [2, 160]]) is None  # 25 steps an epoch
    assert proposals.why_not(command, 4000, batch_schedule=[[0, 32], [2, 128]]) == (
        "batch_schedule=[[0, 32], [2, 128]] is not allowed: phase 2's batch 128 fails steps_per_execution's rule: "
        + proposals.why_not(command, 4000, batch_size=128).split(": ", 1)[1])
    assert "runs past its 1 epochs" in proposals.why_not(command, 4000, batch_schedule=[[0, 32], [1, 160]],
                                                         warmup_epochs=2.0)
    assert command.train.batch_schedule is None  # the command itself is left as it was


def test_a_schedule_whose_rate_falls_at_its_largest_batch_names_that_batch_once_and_says_where_the_rate_falls():
    """Smith's rule or Seesaw at its cap: 8→…→512→512→512 read as three more batches of 512."""
    phases = [[0, 8], [2, 64, 0.8], [4, 64, 0.08]]
    assert ramp.label(phases) == "8→64"
    assert ramp.changes(phases) == "after epoch 2; the rate falling after epoch 4"
    assert ramp.column_label("0:32,2:128,3:512:0.5,4:512:0.1") == (
        "32→128→512 (after epochs 2, 3; the rate falling after epoch 4)")
    assert ramp.column_label("0:32,2:128") == "32→128 (after epoch 2)"
