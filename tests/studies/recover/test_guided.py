"""+study=recover's guided round (harness.studies.recover.guided): the space as Optuna's parameters, what the sampler
is told, and its proposals reproducible from recover.seed; the recipes and configs the real command plans, no run."""
import pytest

from harness.launch.cli import plan_command
from harness.studies.recover import guided


@pytest.fixture(scope="module")
def record():
    plan = plan_command(["+study=recover", "batch_size=8,128", "epochs=5", "seed=0", "recover.trials=8"],
                        multirun=True)
    return plan.study["recover"]


def test_a_sobol_point_is_a_point_of_the_space_and_comes_back_as_the_same_recipe(record):
    for recipe in record["trials"][:8]:
        params = guided.params_of(recipe, record)
        assert params is not None and guided.recipe_of(params, record) == recipe
    dists = guided.distributions(record)
    assert dists["lr_factor"].high == 4.0 * 128 / 8 and dists["lr_factor"].log
    assert (dists["warmup_epochs"].low, dists["warmup_epochs"].high) == (0.0, 0.25 * 5)
    assert (dists["one_minus_momentum"].low, dists["one_minus_momentum"].high) == (0.01, 0.2)


def test_a_recipe_outside_the_space_is_not_told(record):
    """A rule leaves weight decay and momentum to the command (null): no point of the space; a recipe whose lr_factor
    lies beyond the range (a narrowed space) neither; a diverged trial is told as 0, the worst there is."""
    linear = record["trials"][8]
    assert record["sources"][8]["rule"] == "linear" and guided.params_of(linear, record) is None
    beyond = {**record["trials"][0], "lr_factor": 4.0 * 128 / 8 * 1.01}
    assert guided.params_of(beyond, record) is None
    told = [(0, record["trials"][0], "sobol", 0.8), (1, record["trials"][1], "sobol", None), (8, linear, "rule", 0.9)]
    study, _ = guided._study(record, told)
    assert [(t.user_attrs["trial"], t.value) for t in study.trials] == [(0, 0.8), (1, 0.0)]


def test_the_proposals_follow_recover_seed_and_what_the_sampler_was_told(record):
    told = [(k, recipe, "sobol", 0.5 + 0.05 * k) for k, recipe in enumerate(record["trials"][:8])]
    first = guided.propose(record, told, 4)
    assert guided.propose(record, told, 4) == first and len({str(r) for r in first}) == 4
    other_seed = {**record, "settings": {**record["settings"], "seed": 1}}
    assert guided.propose(other_seed, told, 4) != first
    assert guided.propose(record, told[::-1], 4) == first  # told in trial order, whatever order they come in
    assert guided.propose(record, [(k, r, s, 1.0 - v) for k, r, s, v in told], 4) != first
    for recipe in first:
        assert guided.params_of(recipe, record) is not None  # inside the space


def test_batch_norms_momentum_is_a_parameter_as_the_plan_draws_it():
    """With batch norm the space's bn_momentum, [0.5, null] (null: rho_b = 0.99), is 1 - momentum on a log scale over
    [0.01, 0.5]: every Sobol point is a point of it and comes back the same, and the proposals stay within it."""
    plan = plan_command(["+study=recover", "batch_size=8,128", "epochs=5", "seed=0", "recover.trials=8",
                         "model.batch_norm=true"], multirun=True)
    record = plan.study["recover"]
    dist = guided.distributions(record)["one_minus_bn_momentum"]
    assert (dist.low, dist.high, dist.log) == (pytest.approx(0.01), 0.5, True)
    for recipe in record["trials"][:8]:
        assert guided.recipe_of(guided.params_of(recipe, record), record) == recipe
    told = [(k, recipe, "sobol", 0.5 + 0.05 * k) for k, recipe in enumerate(record["trials"][:8])]
    for recipe in guided.propose(record, told, 2):
        assert 0.5 <= recipe["model.bn_momentum"] <= 0.99


def test_without_lr_factor_in_the_space_weight_decay_is_read_at_the_commands_own_learning_rate():
    """~recover.space.lr_factor and lr_factor=2: a trial keeps the command's lr_factor, and its weight decay, drawn as
    lr x wd x steps at that learning rate, is told to the sampler and proposed back at the same one (read at
    lr_factor 1, every Sobol point's lr x wd x steps was half its own, and a proposal's weight decay twice its aim)."""
    plan = plan_command(["+study=recover", "batch_size=8,128", "epochs=5", "seed=0", "recover.trials=8", "lr_factor=2",
                         "~recover.space.lr_factor"], multirun=True)
    record = plan.study["recover"]
    assert "lr_factor" not in record["space"] and record["lr_factor"] == 2.0
    dist = guided.distributions(record)["lr_wd_steps"]
    for recipe in record["trials"][:8]:
        params = guided.params_of(recipe, record)
        assert params is not None and guided.recipe_of(params, record) == recipe
        drawn = recipe["weight_decay"] * record["decay_unit"] * 2.0
        assert params["lr_wd_steps"] == pytest.approx(drawn, rel=1e-3)
        assert dist.low * 0.999 <= drawn <= dist.high * 1.001
