"""The b-vs-B kit (harness.config.pairs) on a command's composed jobs: its points, b and B, the seeds in the command's
order, the as-is order a study plans, and ghost batch norm's chunk or the reason it does not apply."""
import pytest

from harness.config import pairs
from harness.fields import ConfigError
from harness.launch.cli import plan_command


def _points(*overrides):
    plan = plan_command(list(overrides), multirun=True)
    return pairs.of_command(plan.jobs, plan.run_configs, "recover", "recovery", "for the test")


def test_the_points_of_a_command_with_three_sizes_and_two_seeds():
    points = _points("batch_size=64,8,32", "seed=1,0", "model.batch_norm=true")
    assert (points.small_batch, points.large_batch, points.sizes, points.seeds) == (8, 64, [8, 32, 64], [1, 0])
    assert points.as_is_order == [8, 64, 32]
    assert points.small().train.seed == 1 and points.large(0).train.batch_size == 64
    assert "batch_size=32" in points.job(32, 0) and points.job(32, 0) is not points.jobs[(32, 0)]
    assert pairs.ghost_chunk(points.large(), points.small()) == (8, None)


@pytest.mark.parametrize("overrides,reason", [
    (("model.batch_norm=false",), "the model has no batch norm"),
    (("model.batch_norm=true", "model.sync_batchnorm=true"), "normalises the whole global batch"),
    (("model.batch_norm=true", "batch_size=1,64"), "normalised 1 sample at a time"),
])
def test_ghost_batch_norm_says_why_it_does_not_apply(overrides, reason):
    points = _points("batch_size=8,64", "seed=0", *overrides)
    chunk, why = pairs.ghost_chunk(points.large(), points.small())
    assert chunk is None and reason in why


def test_a_command_that_sweeps_another_key_is_refused():
    with pytest.raises(ConfigError, match=r"^lr='0.001,0.01' is not allowed: one value with \+study=recover"):
        _points("batch_size=8,64", "lr=0.001,0.01")
