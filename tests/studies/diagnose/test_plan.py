"""+study=diagnose's plan (harness.studies.diagnose.plan): the arms computed from the user's own command, read from the
planned jobs and their composed, validated configs (no training), and the commands it refuses."""
import math

import pytest

from harness.config import batching
from harness.data.registry import expected_train_size
from harness.launch.cli import main, plan_command
from harness.studies.diagnose.plan import global_batch
from tests.helpers.sweeps import planned


def _schedule(cfg):
    train = cfg.train
    size = expected_train_size(cfg.data, train.imbalance, train.train_fraction, train.tune_fraction)
    plan = batching.plan_batches(train.batch_size, train.per_replica_batch, max(cfg.device.gpus, 1), size)
    return plan, batching.plan_schedule(plan, train)


def _arms(*overrides):
    plan = plan_command(["+study=diagnose", *overrides], multirun=True)
    arms = plan.study["diagnose"]["arms"]
    return plan, [(arms[str(num)], cfg) for num, cfg in enumerate(plan.run_configs)]


def test_the_arms_come_from_the_commands_batch_sizes_epochs_and_seeds():
    """batch_size=16,256 epochs=3 seed=0,1: each seed runs both batch sizes as they are, and at 256 every
    combination (the default, Shapley) of the updates batch 16 takes in 3 epochs and the learning rate x sqrt(256 /
    16); no ghost arm without batch norm."""
    plan, arms = _arms("batch_size=16,256", "epochs=3", "seed=0,1")
    assert [(name, cfg.train.batch_size, cfg.train.seed) for name, cfg in arms] == [
        (name, size, seed) for seed in (0, 1)
        for name, size in (("as_is", 16), ("as_is", 256), ("steps", 256), ("lr", 256), ("steps_lr", 256))]
    small = _schedule(arms[0][1])
    for name, cfg in arms:
        assert cfg.train.epochs == 3 and cfg.train.tune_fraction == 0.1 and cfg.train.lr == 0.001
        batches, schedule = _schedule(cfg)
        if "steps" in name:  # exactly the updates batch 16 takes in its 3 epochs
            assert schedule.total_steps == 3 * small[0].steps_per_epoch and batches.global_batch_size == 256
        else:
            assert cfg.train.budget == "epochs" and cfg.train.epochs == 3
        if "lr" in name:
            assert schedule.peak_lr == pytest.approx(4 * cfg.train.lr) and schedule.warmup_steps == 0
        else:
            assert schedule.peak_lr == cfg.train.lr
    record = plan.study["diagnose"]
    assert record["small_batch"] == 16 and record["large_batch"] == 256 and record["seeds"] == [0, 1]
    assert record["ladder"] == ["steps", "steps_lr"] and "ghost_batch_norm" in record["left_out"]
    assert record["attribution"] == "shapley"
    assert [job[-1] == "diagnose.check_data=true" for job in plan.jobs] == [True] + [False] * 9


def test_the_ladder_on_request_runs_its_arms_in_order():
    plan, arms = _arms("batch_size=16,256", "model.batch_norm=true", "diagnose.attribution=ladder", "seed=0")
    assert [name for name, _ in arms] == ["as_is", "as_is", "steps", "steps_lr", "steps_lr_ghost"]
    assert plan.study["diagnose"]["attribution"] == "ladder"


def test_the_arms_keep_the_small_batchs_update_count_under_per_replica_batch():
    """batch_size=8,64 per replica on 2 devices: global batches 16 and 128; the steps arm takes global batch 16's
    updates, the learning rate scales from 16, and ghost batch norm chunks what batch 16's batch norm normalised
    together on one replica (8)."""
    _, arms = _arms("batch_size=8,64", "per_replica_batch=true", "gpus=2", "simulate_devices=true",
                    "model.batch_norm=true", "epochs=2", "seed=0")
    named = dict(arms)
    assert [global_batch(cfg) for _, cfg in arms] == [16] + [128] * 8
    small, _ = _schedule(arms[0][1])
    for name in ("steps", "steps_lr", "steps_lr_ghost"):
        plan, schedule = _schedule(named[name])
        assert plan.global_batch_size == 128 and plan.replicas == 2
        assert schedule.total_steps == 2 * small.steps_per_epoch == 2 * math.ceil(small.train_size / 16)
    assert _schedule(named["steps_lr"])[1].peak_lr == pytest.approx(math.sqrt(128 / 16) * 0.001)
    assert named["steps_lr_ghost"].model.ghost_batch_size == 8 and named["steps_lr"].model.ghost_batch_size is None


def test_a_linear_learning_rate_warms_up_over_the_small_batchs_epochs():
    _, arms = _arms("batch_size=8,64", "diagnose.lr_scaling=linear", "diagnose.warmup_epochs=2", "seed=0")
    small, _ = _schedule(arms[0][1])
    plan, schedule = _schedule(dict(arms)["steps_lr"])
    assert schedule.peak_lr == pytest.approx(8 * 0.001)
    assert schedule.warmup_steps == 2 * small.steps_per_epoch  # two of batch 8's epochs, in batch 64's steps


def test_shapley_runs_every_subset_of_the_arms_at_the_large_batch():
    plan, arms = _arms("batch_size=8,64", "model.batch_norm=true", "diagnose.attribution=shapley", "seed=0")
    names = [name for name, _ in arms]
    assert names == ["as_is", "as_is", "steps", "lr", "ghost", "steps_lr", "steps_ghost", "lr_ghost",
                     "steps_lr_ghost"]
    lone = dict(arms)
    assert lone["lr"].train.budget == "epochs" and lone["lr"].train.lr_scaling == "sqrt"
    assert lone["ghost"].model.ghost_batch_size == 8 and lone["ghost"].train.lr_scaling == "none"
    assert plan.study["diagnose"]["attribution"] == "shapley"


def test_a_users_model_gets_no_ghost_arm_and_no_arm_key_in_its_constructor(tmp_path, monkeypatch):
    (tmp_path / "mymodels.py").write_text("def small(input_shape, num_classes, filters=8):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plan, arms = _arms("batch_size=8,64", "model=custom", "model._target_=mymodels.small", "+model.filters=4",
                       "seed=0")
    assert [name for name, _ in arms] == ["as_is", "as_is", "steps", "lr", "steps_lr"]
    assert all(dict(cfg.model.options) == {"filters": 4} for _, cfg in arms)
    assert "model=custom" in plan.study["diagnose"]["left_out"]["ghost_batch_norm"]


def test_the_diagnosis_settings_are_not_run_config():
    """diagnose.* and the plan's check_data do not enter RunConfig.flat(): resuming compares runs without them."""
    jobs, configs = planned(("+study=diagnose", "batch_size=8,64", "seed=0"))
    assert jobs[0][-1] == "diagnose.check_data=true"
    assert configs[0].flat() == plan_command(["+study=diagnose", "batch_size=8", "seed=0"], False).run_configs[0].flat()
    assert not any(key.startswith("diagnose") for key in configs[0].flat())


@pytest.mark.parametrize("argv,named", [
    (["+study=diagnose", "batch_size=64"], "batch_size=64 is not allowed: two or more batch sizes"),
    (["+study=diagnose", "batch_size=8,64", "budget=steps"], "budget='steps' is not allowed: left to +study=diagnose"),
    (["+study=diagnose", "batch_size=8,64", "model.ghost_batch_size=4", "model.batch_norm=true"],
     "model.ghost_batch_size='4' is not allowed: left to +study=diagnose"),
    (["+study=diagnose", "batch_size=8,64", "lr=0.001,0.01"], "lr='0.001,0.01' is not allowed: one value"),
    (["+study=diagnose", "batch_size=8,64", "diagnose.attribution=banzhaf"],
     "diagnose.attribution='banzhaf' is not allowed: one of ladder, shapley"),
    (["+study=diagnose", "batch_size=8,5000"], "batch_size=5000 is not allowed: an integer from 1 to"),
    (["+study=hoffer", "batch_size=16,256"], "batch_size='16,256' is not allowed: left to +study=hoffer"),
    (["+study=controls", "batch_size=16,256"], "batch_size='16,256' is not allowed: left to +study=controls"),
])
def test_a_command_that_cannot_be_diagnosed_is_refused_before_anything_runs(argv, named, capsys, tmp_path,
                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "-m"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"harness: error: {named}") and "\n" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_tfds_sets_steps_are_counted_at_its_first_run(tmp_path):
    """TFDS data's size is known only once loaded: the steps arm takes b's updates through base_batch_size, which
    the run turns into E * ceil(N_train / b) (the same count the planner computes where it knows N_train)."""
    _, arms = _arms("dataset=tfds", "dataset.name=mnist", f"dataset.data_dir={tmp_path}", "batch_size=8,64", "seed=0")
    steps = dict(arms)["steps"].train
    assert steps.budget == "steps" and steps.budget_steps is None and steps.base_batch_size == 8
    plan = batching.plan_batches(64, False, 1, 3600)
    assert batching.plan_schedule(plan, steps).total_steps == steps.epochs * math.ceil(3600 / 8)
