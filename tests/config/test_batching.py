"""Batch plans (global / per-replica batch, steps, steps per call) and schedules (lr scaling, warm-up, budget)."""
import dataclasses
import math

import pytest

from harness.config.batching import plan_batches, plan_schedule
from harness.fields import ConfigError


@pytest.fixture
def train(compose):
    """The real default TrainConfig, with fields replaced: train(lr_scaling="linear")."""
    default = compose().train

    def _train(**fields):
        return dataclasses.replace(default, **fields)

    return _train


def test_global_batch_is_split_across_replicas():
    plan = plan_batches(64, per_replica_batch=False, replicas=2, train_size=4000)
    assert (plan.global_batch_size, plan.per_replica_batch_size, plan.steps_per_epoch) == (64, 32, 63)


def test_per_replica_batch_multiplies_by_replicas():
    plan = plan_batches(128, per_replica_batch=True, replicas=4, train_size=4000)
    assert (plan.global_batch_size, plan.per_replica_batch_size, plan.steps_per_epoch) == (512, 128, 8)


def test_uneven_split_is_refused_with_a_way_out():
    with pytest.raises(ConfigError, match="per_replica_batch=true"):
        plan_batches(30, per_replica_batch=False, replicas=4, train_size=4000)


def test_batch_larger_than_training_set_is_refused():
    with pytest.raises(ConfigError, match="training-set size 100"):
        plan_batches(64, per_replica_batch=True, replicas=2, train_size=100)


def test_steps_per_execution_covers_a_whole_epoch_or_a_divisor_of_it():
    assert plan_batches(8, False, 1, 4000).steps_per_execution == 500
    assert plan_batches(8, False, 1, 4000, steps_per_execution=100).steps_per_execution == 100
    with pytest.raises(ConfigError, match=r"0 \(a whole epoch per call\) or a divisor of the 500 steps per epoch"):
        plan_batches(8, False, 1, 4000, steps_per_execution=300)


def test_automatic_steps_per_execution_is_one_step_per_call_with_several_replicas():
    assert plan_batches(64, False, 2, 4000).steps_per_execution == 1
    assert plan_batches(64, False, 2, 4000, steps_per_execution=1).steps_per_execution == 1
    with pytest.raises(ConfigError, match="0 or 1 with gpus=2"):
        plan_batches(64, False, 2, 4000, steps_per_execution=3)


def test_on_jax_several_replicas_run_a_whole_epoch_per_call_and_the_last_batch_must_split_evenly():
    """Keras's DataParallel runs the multi-step loop (MirroredStrategy's does not), and JAX shards every batch
    evenly, the epoch's last, smaller one too."""
    assert plan_batches(64, False, 2, 4000, backend="jax").steps_per_execution == 63
    assert plan_batches(64, False, 2, 4000, steps_per_execution=9, backend="jax").steps_per_execution == 9
    assert plan_batches(64, False, 2, 4001).steps_per_execution == 1  # TensorFlow splits a last batch of 33
    with pytest.raises(ConfigError, match=r"batch_size=64 .*over gpus=2 on JAX .*4001 training samples leave a last "
                                          r"batch of 33"):
        plan_batches(64, False, 2, 4001, backend="jax")
    # JAX's simulated host devices: one step per call (a call's steps in flight deadlocked their all-reduce)
    assert plan_batches(64, False, 2, 4000, backend="jax", host_devices=True).steps_per_execution == 1
    with pytest.raises(ConfigError, match="0 or 1 with gpus=2 .JAX's simulated host devices deadlock"):
        plan_batches(64, False, 2, 4000, steps_per_execution=9, backend="jax", host_devices=True)


def test_plan_errors_are_config_errors_naming_the_key_and_value():
    with pytest.raises(ConfigError) as caught:
        plan_batches(4001, False, 1, 4000)
    assert isinstance(caught.value, ValueError)  # callers that catch ValueError still catch it
    assert (caught.value.key, caught.value.value) == ("batch_size", 4001)
    assert str(caught.value) == ("batch_size=4001 is not allowed: an integer from 1 to 4000: the training-set "
                                 "size 4000")
    with pytest.raises(ValueError, match="replicas must be >= 1"):
        plan_batches(8, False, 0, 4000)


def test_plan_columns_are_the_derived_quantities_only():
    plan = plan_batches(64, False, 2, 4000)
    assert plan.as_columns() == {"global_batch_size": 64, "per_replica_batch_size": 32, "replicas": 2,
                                 "train_size": 4000, "steps_per_epoch": 63}
    assert plan.describe() == ("global batch 64 = 2 replica(s) x 32; 4000 training samples -> 63 steps per epoch")


@pytest.mark.parametrize("scaling,factor", [("none", 1.0), ("linear", 4.0), ("sqrt", 2.0)])
def test_lr_scaling_relative_to_base_batch(scaling, factor, train):
    plan = plan_batches(128, False, 1, 4000)
    assert plan_schedule(plan, train(lr_scaling=scaling)).peak_lr == pytest.approx(0.001 * factor)


@pytest.mark.parametrize("scaling,factor", [("none", 1.0), ("sqrt", 2.0)])
def test_lr_factor_multiplies_the_learning_rate_before_any_scaling(scaling, factor, train):
    plan = plan_batches(128, False, 1, 4000)
    schedule = plan_schedule(plan, train(lr_scaling=scaling, lr_factor=0.215))
    assert schedule.peak_lr == pytest.approx(0.001 * 0.215 * factor)


def test_step_budget_gives_every_batch_size_the_same_updates(train):
    for batch in (8, 32, 128):
        plan = plan_batches(batch, False, 1, 4000)
        schedule = plan_schedule(plan, train(budget="steps", budget_steps=7500))
        assert schedule.total_steps == 7500
        assert schedule.epochs == math.ceil(7500 / plan.steps_per_epoch)


def test_step_budget_without_a_count_matches_the_base_batch(train):
    plan = plan_batches(128, False, 1, 4000)
    schedule = plan_schedule(plan, train(budget="steps", budget_steps=None, base_batch_size=8, epochs=15))
    assert schedule.total_steps == 500 * 15 and schedule.epochs == math.ceil(7500 / 32)


def test_epoch_budget_runs_the_configured_epochs_with_warmup_in_steps(train):
    plan = plan_batches(8, False, 1, 4000)  # 500 steps per epoch
    schedule = plan_schedule(plan, train(epochs=15, warmup_epochs=1.5))
    assert (schedule.epochs, schedule.total_steps, schedule.warmup_steps) == (15, None, 750)


def test_a_target_checked_within_epochs_compiles_chunks_of_five_steps_or_5pc_of_an_epoch_that_divide_it():
    from harness.config.batching import CHECK_SPACING, TARGET_CHUNK

    assert plan_batches(8, False, 1, 3600, check_target=True).steps_per_execution == 18   # 450 steps: <= 22
    assert plan_batches(64, False, 1, 3600, check_target=True).steps_per_execution == 3   # 57 steps: 1, 3, 19
    assert plan_batches(512, False, 1, 3600, check_target=True).steps_per_execution == 4  # 8 steps
    assert plan_batches(2048, False, 1, 3600, check_target=True).steps_per_execution == 2  # 2 steps
    assert plan_batches(13, False, 1, 3600, check_target=True).steps_per_execution == 1   # 277 steps: a prime
    assert plan_batches(1, False, 1, 3600, check_target=True).steps_per_execution == 180  # 3600 steps: <= 180
    assert plan_batches(8, False, 1, 3600, steps_per_execution=50, check_target=True).steps_per_execution == 50
    assert plan_batches(64, False, 2, 4000, check_target=True).steps_per_execution == 1
    for batch in (1, 2, 8, 16, 32, 100, 256, 1000):
        plan = plan_batches(batch, False, 1, 3600, check_target=True)
        assert plan.steps_per_epoch % plan.steps_per_execution == 0
        assert plan.steps_per_execution <= max(TARGET_CHUNK, CHECK_SPACING * plan.steps_per_epoch)


def test_samples_seen_counts_each_epochs_last_partial_batch_as_what_it_holds():
    from harness.config.batching import samples_seen

    plan = plan_batches(2048, False, 1, 3600)  # epochs of 2048 + 1552
    assert [samples_seen(plan, s) for s in (0, 1, 2, 3, 4, 5)] == [0, 2048, 3600, 5648, 7200, 9248]
    plan = plan_batches(8, False, 1, 3600)  # 450 full batches
    assert samples_seen(plan, 451) == 3608 and samples_seen(plan, 900) == 7200
