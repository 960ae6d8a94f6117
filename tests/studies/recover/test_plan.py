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
    assert arms == ["as_is"] * 4 + [f"trial_{k}" for k in range(16 + 4)]  # the Sobol points, then the four rules
    assert [(c.train.batch_size, c.train.seed) for c in plan.run_configs[:4]] == [(8, 0), (128, 0), (8, 1), (128, 1)]
    assert [s.get("rule") or s["source"] for s in record["sources"]] == ["sobol"] * 16 + ["linear", "sqrt", "adam_sde",
                                                                                         "ramp"]
    trials = plan.run_configs[4:20]
    assert all(c.train.batch_size == 128 and c.train.seed == 0 and c.train.epochs == 5 for c in trials)
    assert all(c.train.tune_fraction == 0.1 for c in plan.run_configs)
    for cfg, recipe in zip(trials, record["trials"]):
        assert cfg.train.lr_factor == recipe["lr_factor"] and 0.25 <= recipe["lr_factor"] <= 4 * 128 / 8
        assert cfg.train.lr_schedule == recipe["lr_schedule"] and 0 <= cfg.train.warmup_epochs <= 5 / 4
        assert 0.8 <= cfg.train.momentum <= 0.99 and 0 <= cfg.train.label_smoothing <= 0.2
        assert cfg.train.optimizer == (recipe["optimizer"] or "adam")
        steps = 5 * -(-3240 // 128)  # 5 epochs of the 3,240 samples the tuning slice leaves
        assert 1e-3 * 0.99 <= 0.001 * cfg.train.lr_factor * cfg.train.weight_decay * steps <= 1.01
    assert {r["optimizer"] for r in record["trials"][:16]} == {None, "adamw", "lamb"}  # the space's choices all drawn
    assert set(record["left_out"]) == {"bn_momentum", "ghost_batch_size", "precise_bn"}  # no batch norm here
    assert record["rules_left_out"] == {"precise_bn": "a model with batch norm, and this one has none", "smith": "a step schedule (lr_schedule=step); lr_schedule=constant has no fall to turn into a batch",
        "seesaw": "a smooth decay (lr_schedule=cosine or linear), whose halvings become doublings of the batch; "
                  "lr_schedule=constant has none"}
    # the trials run without the probes (the report's Why reads the runs as they are, which keep the command's)
    assert [c.train.probes for c in plan.run_configs] == [True] * 4 + [False] * 20
    assert all(c.train.probes for c in _plan("batch_size=8,128", "seed=0", "recover.probes=true").run_configs)


def test_the_published_rules_are_candidates_with_their_values_at_the_runs_own_keys():
    """b=8, B=128 (k=16), 5 epochs, Adam at lr 0.001: linear lr x 16 and 1 epoch of warm-up (min(5, 5/5)); sqrt
    lr x 4, the same warm-up; adam_sde lr x 4, beta_1 1 - 16 x 0.1 clipped to 0, beta_2 1 - 16 x 0.001 = 0.984,
    epsilon 1e-7 / 4; each reaches its run's config."""
    plan = _plan("batch_size=8,128", "epochs=5", "seed=0", "recover.trials=2")
    record = plan.study["recover"]
    assert record["trials"][2:] == [{"lr_factor": 16.0, "warmup_epochs": 1.0},
                                    {"lr_factor": 4.0, "warmup_epochs": 1.0},
                                    {"lr_factor": 4.0, "momentum": 0.0, "beta_2": 0.984, "epsilon": 2.5e-08},
                                    {"batch_size": 8, "batch_schedule": "[[0,8,1],[1,128,4]]"}]
    assert record["sources"][4] == {"source": "rule", "rule": "adam_sde", "clipped": ["beta_1 -0.6 clipped to 0"]}
    linear, sqrt, sde, ramp = (cfg.train for cfg in plan.run_configs[4:])
    assert (linear.lr_factor, linear.warmup_epochs, linear.batch_size) == (16.0, 1.0, 128)
    assert (sqrt.lr_factor, sqrt.warmup_epochs, sqrt.lr_schedule) == (4.0, 1.0, "constant")
    assert (sde.lr_factor, sde.momentum, sde.beta_2, sde.epsilon, sde.warmup_epochs) == (4.0, 0.0, 0.984, 2.5e-8, 0)
    # the ramp runs from B's job as b for the first tenth of the epochs (one), then B at the sqrt rule's rate
    assert (ramp.batch_size, ramp.batch_schedule, ramp.epochs, ramp.seed) == (8, ((0, 8, 1.0), (1, 128, 4.0)), 5, 0)


def test_a_step_schedule_gets_smiths_ramp_from_b_capped_at_b_large():
    """lr_schedule=step epochs=8 (the key taken out of the search's space to be given): its falls at epochs 4 and 6
    become batches 80 and 800, capped at B = 128, where the rate falls what the cap leaves (800 / 128: lr / batch
    falls tenfold at each fall); run from B's job as a ramp from b."""
    plan = _plan("batch_size=8,128", "epochs=8", "seed=0", "recover.trials=2", "lr_schedule=step",
                 "~recover.space.lr_schedule", "recover.rules=[ramp,smith]")
    record = plan.study["recover"]
    assert record["trials"][3] == {"batch_size": 8, "batch_schedule": "[[0,8,1],[4,80,1],[6,128,0.16]]",
                                   "lr_schedule": "constant", "lr_scaling": "none", "lr_factor": 1.0}
    smith = plan.run_configs[-1].train
    assert (smith.batch_schedule, smith.lr_schedule) == (((0, 8, 1.0), (4, 80, 1.0), (6, 128, 0.16)), "constant")
    assert [s.get("rule") for s in record["sources"][2:]] == ["ramp", "smith"] and record["rules_left_out"] == {}


def test_the_rules_start_from_bs_effective_learning_rate_and_sqrt_brings_ghost_batch_norm():
    """lr_scaling=linear base_batch_size=32 already gives B lr x 128/32 and b lr x 8/32: the linear rule's factor
    is 1 (b's x 16), the square-root rule's 1/4; with batch norm the square-root rule normalises in chunks of 8;
    a gentler k (2) leaves beta_1 unclipped; recover.rules narrows the list."""
    plan = _plan("batch_size=8,128", "epochs=30", "seed=0", "recover.trials=2", "lr_scaling=linear",
                 "base_batch_size=32", "model.batch_norm=true", "recover.rules=[linear,sqrt]")
    assert plan.study["recover"]["trials"][2:] == [  # and the EMA rule's momentum, 0.99^16 (the next test)
        {"lr_factor": 1.0, "warmup_epochs": 5.0, "model.bn_momentum": 0.8515},
        {"lr_factor": 0.25, "warmup_epochs": 5.0, "model.ghost_batch_size": 8, "model.bn_momentum": 0.8515}]
    assert plan.run_configs[-1].model.ghost_batch_size == 8
    gentle = _plan("batch_size=8,16", "seed=0", "recover.trials=2", "recover.rules=[adam_sde]", "momentum=0.8",
                   "~recover.space.momentum")
    assert gentle.study["recover"]["trials"][2:] == [
        {"lr_factor": 1.414, "momentum": 0.6, "beta_2": 0.998, "epsilon": 7.071e-08}]
    assert gentle.study["recover"]["sources"][2] == {"source": "rule", "rule": "adam_sde"}
    steep = _plan("batch_size=8,512", "seed=0", "recover.trials=2", "recover.rules=[adam_sde]")  # k = 64
    assert steep.study["recover"]["trials"][2]["beta_2"] == 0.95  # 1 - 64 x 0.001 = 0.936, floored
    assert steep.study["recover"]["sources"][2]["clipped"] == ["beta_1 -5.4 clipped to 0",
                                                               "beta_2 0.936 clipped to 0.95"]
    none = _plan("batch_size=8,16", "seed=0", "recover.trials=2", "recover.rules=[]")
    assert len(none.study["recover"]["trials"]) == 2 and none.study["recover"]["rules_left_out"] == {}


def test_the_precise_bn_rules_samples_are_the_recomputed_columns_subset():
    from harness.run import precise_bn
    from harness.config.rules import PRECISE_BN_SAMPLES

    assert PRECISE_BN_SAMPLES == precise_bn.SUBSET


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
    searched = record["trials"][:8]  # the rules after them
    assert len(record["trials"]) == 8 + 5 and {r["optimizer"] for r in searched} == {"adamw"}
    assert {r["precise_bn"] for r in searched} == {None, 1024}
    assert {r["model.ghost_batch_size"] for r in searched} == {None, 8} and not record["left_out"]
    assert all(0.9 <= r["model.bn_momentum"] <= 0.95 for r in searched)


def test_the_rules_scale_the_batch_norm_momentum_by_the_ema_rule_and_the_search_reaches_it():
    """Batch 8 against 128 (k = 16) with the built-in model's batch norm (Keras's momentum 0.99): every rule sets
    model.bn_momentum to 0.99^16 = 0.8515 (Busbridge et al. 2023), and the search's default range, [0.5, rho_b]
    drawn log-uniformly in 1 - momentum, holds it. The command's own momentum is rho_b, b's as it runs: 0.9^16 =
    0.185 is clipped to the floor 0.5, and the clipping recorded."""
    plan = _plan("batch_size=8,128", "epochs=5", "seed=0", "model.batch_norm=true", "recover.trials=16")
    record = plan.study["recover"]
    assert record["batch_norm"] == {"layers": 3, "momenta": [0.99], "rho": 0.99, "given": False}
    assert [t.get("model.bn_momentum") for t in record["trials"][16:]] == [0.8515] * 3 + [None, None]  # precise_bn,
    # and the ramp, whose phases follow the EMA rule from b's own
    assert [c.model.bn_momentum for c in plan.run_configs[18:21]] == [0.8515] * 3  # the rules' runs get it
    assert record["trials"][19] == {"lr_factor": 16.0, "warmup_epochs": 1.0, "precise_bn": 1024}  # linear + precise
    assert plan.run_configs[21].train.precise_bn == 1024 and plan.run_configs[21].model.bn_momentum is None
    searched = [t["model.bn_momentum"] for t in record["trials"][:16]]
    assert all(0.5 <= m <= 0.99 for m in searched) and min(searched) < 0.8515 < max(searched)
    assert sum(m > 0.9 for m in searched) >= 4  # log-uniform in 1 - m: a quarter of the draws at 0.9 or above
    given = _plan("batch_size=8,128", "epochs=5", "seed=0", "model.batch_norm=true", "model.bn_momentum=0.9",
                  "recover.trials=2", "recover.rules=[linear]")
    assert [c.model.bn_momentum for c in given.run_configs[:2]] == [0.9, 0.9]  # b and B as they are
    assert given.study["recover"]["trials"][2]["model.bn_momentum"] == 0.5
    assert given.study["recover"]["batch_norm"]["given"]
    assert given.study["recover"]["sources"][2]["clipped"] == ["batch-norm momentum 0.9^16 = 0.1853 clipped to 0.5"]
    assert all(0.5 <= t["model.bn_momentum"] <= 0.9 for t in given.study["recover"]["trials"][:2])


def test_synchronized_batch_norm_is_searched_without_ghost_batch_norm():
    plan = _plan("batch_size=8,64", "seed=0", "model.batch_norm=true", "model.sync_batchnorm=true",
                 "recover.trials=2", "recover.rules=[sqrt]")
    record = plan.study["recover"]
    assert list(record["left_out"]) == ["ghost_batch_size"] and "not synchronized" in record["left_out"][
        "ghost_batch_size"]
    assert record["trials"][2] == {"lr_factor": 2.828, "warmup_epochs": 3.0, "model.bn_momentum": 0.9227}


USER_MODELS = """
import keras

def with_batch_norm(input_shape, num_classes, momentum=0.999):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(8, use_bias=False)(keras.layers.Flatten()(inputs))
    x = keras.layers.BatchNormalization(momentum=momentum)(x)
    inner = keras.Sequential([keras.layers.Dense(8), keras.layers.BatchNormalization()])  # nested, Keras's 0.99
    x = inner(keras.layers.Activation("relu")(x))
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax")(x))

def without(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(8, activation="relu")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax")(x))
"""


def test_a_users_model_is_built_to_find_its_batch_norm_and_the_rules_follow_it(tmp_path, monkeypatch):
    """model=custom: the plan builds the user's model in a process of its own and finds both batch-norm layers (one
    nested): rho_b is the largest momentum, 0.999, so the rules set 0.999^16 = 0.9841 and the search ranges up to
    it; a model without batch norm gets neither, and the note says why."""
    name = f"usermodels_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(USER_MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    plan = _plan("batch_size=8,128", "seed=0", "model=custom", f"model._target_={name}.with_batch_norm",
                 "recover.trials=2")
    record = plan.study["recover"]
    assert record["batch_norm"] == {"layers": 2, "momenta": [0.99, 0.999], "rho": 0.999, "given": False}
    assert [t.get("model.bn_momentum") for t in record["trials"][2:]] == [0.9841] * 3 + [None, None]
    assert record["trials"][5]["precise_bn"] == 1024 and record["sources"][5]["rule"] == "precise_bn"
    assert all(0.5 <= t["model.bn_momentum"] <= 0.999 for t in record["trials"][:2])
    assert list(record["left_out"]) == ["ghost_batch_size"]
    none = _plan("batch_size=8,128", "seed=0", "model=custom", f"model._target_={name}.without", "recover.trials=2",
                 "backend=jax")  # built on the command's backend
    record = none.study["recover"]
    assert record["batch_norm"] == {"layers": 0, "momenta": [], "rho": None, "given": False}
    assert record["left_out"]["bn_momentum"] == "a model with batch norm, and this one has none"
    assert not any("model.bn_momentum" in t for t in record["trials"])


def test_the_weight_decay_range_is_at_the_runs_own_peak_learning_rate_and_the_optimizer_is_an_input():
    """With lr_scaling=sqrt the peak rate is lr x lr_factor x sqrt(128 / 32): lr x wd x steps stays in [1e-3, 1]
    at it. optimizer=sgd on the command line is the choice null stands for, not refused."""
    plan = _plan("batch_size=8,128", "epochs=5", "seed=0", "lr_scaling=sqrt", "optimizer=sgd")
    for cfg in plan.run_configs[2:18]:  # the Sobol trials (after b and B as they are; the rules after them)
        steps = 5 * -(-3240 // 128)
        peak = 0.001 * cfg.train.lr_factor * (128 / 32) ** 0.5
        assert 1e-3 * 0.99 <= peak * cfg.train.weight_decay * steps <= 1.01
    assert {c.train.optimizer for c in plan.run_configs[2:]} == {"sgd", "adamw", "lamb"}
    assert plan.study["recover"]["rules_left_out"] == {
        "adam_sde": "the Adam family only (adam, adamw, lamb, nadam), not optimizer=sgd",
        "precise_bn": "a model with batch norm, and this one has none", "smith": "a step schedule (lr_schedule=step); lr_schedule=constant has no fall to turn into a batch",
        "seesaw": "a smooth decay (lr_schedule=cosine or linear), whose halvings become doublings of the batch; "
                  "lr_schedule=constant has none"}
    assert [s.get("rule") for s in plan.study["recover"]["sources"][16:]] == ["linear", "sqrt", "ramp"]


def test_a_key_taken_out_of_the_space_may_be_given():
    """~recover.space.bn_momentum: the search leaves the momentum alone, the command's own in every searched trial;
    the rules still scale it by the EMA rule (0.95^8)."""
    plan = _plan("batch_size=8,64", "seed=0", "model.batch_norm=true", "model.bn_momentum=0.95",
                 "~recover.space.bn_momentum", "recover.trials=2")
    assert all(cfg.model.bn_momentum == 0.95 for cfg in plan.run_configs[:4])
    assert "model.bn_momentum" not in plan.study["recover"]["trials"][0]
    assert [cfg.model.bn_momentum for cfg in plan.run_configs[4:]] == [0.6634] * 3 + [0.95] * 2  # precise_bn: no
    # EMA; the ramp: its own at each phase


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
    (["+study=recover", "batch_size=8,64", "model.batch_norm=true", "recover.space.bn_momentum=[0.9,1.2]"],
     "recover.space.bn_momentum=[0.9, 1.2]", "high null for b's own momentum"),
    (["+study=recover", "batch_size=8,64", "~recover.space"], "recover.space", "at least one key"),
    (["+study=recover", "batch_size=8,64", "recover.rules=[linear,lars]"], "recover.rules=['linear', 'lars']",
     "distinct rules among linear, sqrt, adam_sde"),
    (["+study=recover", "batch_size=8,64", "pause_epoch=1"], "pause_epoch='1'", "null with +study=recover"),
    (["+study=recover", "batch_size=8,64", "recover.rungs=[0.5,1.5]"], "recover.rungs=[0.5, 1.5]",
     "increasing fractions in (0, 1)"),
    (["+study=recover", "batch_size=8,64", "recover.keep=1"], "recover.keep=1", "a number in (0, 1)"),
]


@pytest.mark.parametrize("argv,named,allowed", BAD, ids=[" ".join(b[0][1:]) for b in BAD])
def test_a_command_that_cannot_be_searched_is_refused_before_anything_runs(argv, named, allowed, capsys, tmp_path,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "-m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err and allowed in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_settings_read_back_from_sweep_json_are_the_ones_validated_and_an_old_sweeps_absent_keys_mean_before():
    """A plan's recorded settings come back as the same Settings; the recover golden (a sweep made before the guided
    round and the rules) records neither: read back as no guided round and no rules, not as today's defaults."""
    import json
    from pathlib import Path

    from harness.studies.recover import settings

    plan = _plan("batch_size=8,64", "seed=0", "recover.trials=4", "recover.tolerance=0.02", "recover.guided=2")
    record = plan.study["recover"]
    read = settings.recorded(record)
    assert read == settings.from_dict({**record["settings"], "space": record["space"]})
    assert (read.tolerance, read.guided, read.trials, read.rules) == (0.02, 2, 4, settings.RULES)
    golden = json.loads((Path(__file__).parents[2] / "fixtures" / "studies" / "recover" / "sweep.json").read_text())
    old = settings.recorded(golden["recover"])
    assert "guided" not in golden["recover"]["settings"] and (old.guided, old.rules) == (0, ())
    assert (old.tolerance, old.confirm) == (0.01, 2)
    assert old.probes  # an older sweep's trials had the probes: its later rounds keep them
