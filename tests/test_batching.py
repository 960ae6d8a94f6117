import pytest

from harness.batching import plan_batches


def test_global_batch_is_split_across_replicas():
    plan = plan_batches(64, per_replica_batch=False, replicas=2, train_size=4000)
    assert (plan.global_batch_size, plan.per_replica_batch_size, plan.steps_per_epoch) == (64, 32, 63)


def test_per_replica_batch_multiplies_by_replicas():
    plan = plan_batches(128, per_replica_batch=True, replicas=4, train_size=4000)
    assert (plan.global_batch_size, plan.per_replica_batch_size, plan.steps_per_epoch) == (512, 128, 8)


def test_uneven_split_is_refused_with_a_way_out():
    with pytest.raises(ValueError, match="per_replica_batch=true"):
        plan_batches(30, per_replica_batch=False, replicas=4, train_size=4000)


def test_batch_larger_than_training_set_is_refused():
    with pytest.raises(ValueError, match="training-set size 100"):
        plan_batches(64, per_replica_batch=True, replicas=2, train_size=100)


def test_steps_per_execution_covers_a_whole_epoch_or_a_divisor_of_it():
    assert plan_batches(8, False, 1, 4000).steps_per_execution == 500
    assert plan_batches(8, False, 1, 4000, steps_per_execution=100).steps_per_execution == 100
    with pytest.raises(ValueError, match="must divide the 500 steps"):
        plan_batches(8, False, 1, 4000, steps_per_execution=300)
