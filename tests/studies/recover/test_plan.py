"""+study=recover's round 1 (harness.studies.recover.plan): the reference and the search computed from the user's own
command, read from the planned jobs and their composed, validated configs (no training), and its refusals."""
import pytest

from harness.launch.cli import main, plan_command


def _plan(*overrides):
    return plan_command(["+study=recover", *overrides], multirun=True)


def test_the_reference_and_the_sobol_search_come_from_the_command():
    """batch_size=8,128 epochs=5 seed=0,1: both sizes as they are per seed, then 16 recipes at 128 on seed 0, each
    within 5 epochs and holding out the tuning slice; the recipes are the scrambled Sobol points of recover.seed."""
    plan = _plan("batch_size=8,128", "epochs=5", "seed=0,1")
    record = plan.study["recover"]
    arms = [record["arms"][str(num)] for num in range(len(plan.jobs))]
    assert arms == ["as_is"] * 4 + [f"trial_{k}" for k in range(16)]
    assert [(c.train.batch_size, c.train.seed) for c in plan.run_configs[:4]] == [(8, 0), (128, 0), (8, 1), (128, 1)]
    trials = plan.run_configs[4:]
    assert all(c.train.batch_size == 128 and c.train.seed == 0 and c.train.epochs == 5 for c in trials)
    assert all(c.train.tune_fraction == 0.1 for c in plan.run_configs)
    for cfg, recipe in zip(trials, record["trials"]):
        assert cfg.train.lr_factor == recipe["lr_factor"] and 0.25 <= recipe["lr_factor"] <= 4 * 128 / 8
        assert cfg.train.lr_schedule == recipe["lr_schedule"] and 0 <= cfg.train.warmup_epochs <= 5 / 4
        assert 0.8 <= cfg.train.momentum <= 0.99 and 0 <= cfg.train.label_smoothing <= 0.2
        assert cfg.train.optimizer == (recipe["optimizer"] or "adam")
        steps = 5 * -(-3240 // 128)  # 5 epochs of the 3,240 samples the tuning slice leaves
        assert 1e-3 * 0.99 <= 0.001 * cfg.train.lr_factor * cfg.train.weight_decay * steps <= 1.01
    assert {r["optimizer"] for r in record["trials"]} == {None, "adamw", "lamb"}  # the space's choices all drawn
    assert set(record["left_out"]) == {"bn_momentum", "ghost_batch_size"}  # no batch norm here


def test_the_recipes_are_reproducible_from_recover_seed():
    first = _plan("batch_size=8,64", "seed=0")
    again = _plan("batch_size=8,64", "seed=0")
    other = _plan("batch_size=8,64", "seed=0", "recover.seed=1")
    assert first.study["recover"]["trials"] == again.study["recover"]["trials"]
    assert first.study["recover"]["trials"] != other.study["recover"]["trials"]


def test_a_narrowed_space_and_a_batch_norm_model_change_the_search():
    plan = _plan("batch_size=8,64", "seed=0", "model.batch_norm=true", "recover.space.optimizer=[adamw]",
                 "recover.space.bn_momentum=[0.9,0.95]", "recover.trials=8")
    record = plan.study["recover"]
    assert len(record["trials"]) == 8 and {r["optimizer"] for r in record["trials"]} == {"adamw"}
    assert {r["model.ghost_batch_size"] for r in record["trials"]} == {None, 8} and not record["left_out"]
    assert all(0.9 <= r["model.bn_momentum"] <= 0.95 for r in record["trials"])


def test_the_weight_decay_range_is_at_the_runs_own_peak_learning_rate_and_the_optimizer_is_an_input():
    """With lr_scaling=sqrt the peak rate is lr x lr_factor x sqrt(128 / 32): lr x wd x steps stays in [1e-3, 1]
    at it. optimizer=sgd on the command line is the choice null stands for, not refused."""
    plan = _plan("batch_size=8,128", "epochs=5", "seed=0", "lr_scaling=sqrt", "optimizer=sgd")
    for cfg in plan.run_configs[2:]:  # the trials (after b and B as they are)
        steps = 5 * -(-3240 // 128)
        peak = 0.001 * cfg.train.lr_factor * (128 / 32) ** 0.5
        assert 1e-3 * 0.99 <= peak * cfg.train.weight_decay * steps <= 1.01
    assert {c.train.optimizer for c in plan.run_configs[2:]} == {"sgd", "adamw", "lamb"}


def test_a_key_taken_out_of_the_space_may_be_given():
    """~recover.space.bn_momentum: the search leaves the momentum alone, so the command's own may be given."""
    plan = _plan("batch_size=8,64", "seed=0", "model.batch_norm=true", "model.bn_momentum=0.95",
                 "~recover.space.bn_momentum", "recover.trials=2")
    assert all(cfg.model.bn_momentum == 0.95 for cfg in plan.run_configs)
    assert "model.bn_momentum" not in plan.study["recover"]["trials"][0]


BAD = [
    (["+study=recover", "batch_size=8,64", "lr_schedule=cosine"], "lr_schedule='cosine'",
     "left to +study=recover, whose search sets it: narrow recover.space.lr_schedule"),
    (["+study=recover", "batch_size=8,64", "lr_factor=2"], "lr_factor='2'", "left to +study=recover"),
    (["+study=recover", "batch_size=64"], "batch_size=64", "two or more batch sizes with +study=recover"),
    (["+study=recover", "batch_size=8,64", "recover.trials=12"], "recover.trials=12", "a power of two"),
    (["+study=recover", "batch_size=8,64", "recover.tune_fraction=0"], "recover.tune_fraction=0", "(0, 1)"),
    (["+study=recover", "batch_size=8,64", "+recover.space.dropout=[0,1]"], "recover.space.dropout",
     "a key of the space"),
    (["+study=recover", "batch_size=8,64", "recover.space.momentum=[0,0.1]"], "recover.space.momentum",
     "low > 0 (log-uniform)"),
    (["+study=recover", "batch_size=8,64", "epochs=2,3"], "epochs='2,3'", "one value with +study=recover"),
    (["+study=recover", "batch_size=8,64", "model.batch_norm=true", "model.bn_momentum=0.95"],
     "model.bn_momentum='0.95'", "narrow recover.space.bn_momentum"),
    (["+study=recover", "batch_size=8,64", "~recover.space"], "recover.space", "at least one key"),
]


@pytest.mark.parametrize("argv,named,allowed", BAD, ids=[" ".join(b[0][1:]) for b in BAD])
def test_a_command_that_cannot_be_searched_is_refused_before_anything_runs(argv, named, allowed, capsys, tmp_path,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "-m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err and allowed in err, err
    assert list(tmp_path.iterdir()) == []
