"""Config composition and validation: every bad key or value exits 2 with one line, before anything runs."""
import re
import subprocess
import sys

import pytest

from harness.launch.cli import main


def test_defaults_compose_to_the_documented_values(compose):
    cfg = compose()
    assert cfg.data.name == "mnist1d" and cfg.model.name == "convnet"
    assert cfg.train.batch_size == 32 and cfg.train.shuffle is True and cfg.train.imbalance == 0.0
    assert cfg.device.gpus == 0 and cfg.device.devices is None and cfg.device.simulate_devices is False
    assert cfg.device.backend == "tensorflow" and compose("backend=jax").device.backend == "jax"
    flat = cfg.flat()
    assert {"batch_size", "gpus", "shuffle", "imbalance", "seed", "dataset", "model", "dataset.num_samples",
            "model.width"} <= set(flat)


def test_the_recipe_reaches_the_run_and_at_its_defaults_is_no_part_of_its_identity(compose):
    """A run from before the recipe keys existed has none of them in run.json's config; the same command now
    composes them at their defaults, which identity() leaves out, so its fingerprint and a resume's comparison
    see the same config as before. A key set away from its default is part of it."""
    default = compose()
    assert default.train.lr_schedule == "constant" and default.train.momentum is None
    assert not {"momentum", "nesterov", "weight_decay", "lr_schedule", "label_smoothing", "beta_2", "epsilon"} \
        & set(default.identity())
    assert {"momentum", "lr_schedule"} <= set(default.flat())  # the metrics columns hold the values in force
    tuned = compose("optimizer=momentum", "momentum=0.5", "nesterov=true", "weight_decay=0.001",
                    "lr_schedule=cosine", "label_smoothing=0.1")
    assert (tuned.train.momentum, tuned.train.nesterov, tuned.train.weight_decay, tuned.train.lr_schedule,
            tuned.train.label_smoothing) == (0.5, True, 0.001, "cosine", 0.1)
    assert {k: tuned.identity()[k] for k in ("momentum", "lr_schedule")} == {"momentum": 0.5, "lr_schedule": "cosine"}
    assert "weight_decay" in compose("weight_decay=0").identity()  # 0 is not null: no decay, even for AdamW
    second = compose("beta_2=0.95", "epsilon=1e-6")
    assert (second.train.beta_2, second.train.epsilon) == (0.95, 1e-6)
    assert {k: second.identity()[k] for k in ("beta_2", "epsilon")} == {"beta_2": 0.95, "epsilon": 1e-6}


def test_overrides_and_groups_reach_the_dataclasses(compose):
    cfg = compose("batch_size=8", "dataset=digits", "model=mlp", "model.width=2", "shuffle=false",
                  "imbalance=0.5", "optimizer=momentum", "lr=0.1", "gpus=2", "devices=[0,3]")
    assert (cfg.train.batch_size, cfg.data.name, cfg.model.name, cfg.model.width) == (8, "digits", "mlp", 2.0)
    assert cfg.train.shuffle is False and cfg.train.imbalance == 0.5 and cfg.train.optimizer == "momentum"
    assert cfg.device.devices == (0, 3)


BAD = [
    (["foo=1"], "foo=1", "valid keys are"),
    (["+foo=1"], "foo=1", "valid keys are"),
    (["dataset.foo=3"], "dataset.foo=3", "dataset.num_samples"),
    (["batch_size=0"], "batch_size=0", ">= 1"),
    (["batch_size=abc"], "batch_size='abc'", "integer"),
    (["batch_size=2.5"], "batch_size=2.5", "integer"),
    (["batch_size=4001"], "batch_size=4001", "training-set size 4000"),
    (["steps_per_execution=7", "batch_size=8"], "steps_per_execution=7", "divisor of the 500 steps per epoch"),
    (["steps_per_execution=5", "gpus=2", "simulate_devices=true"], "steps_per_execution=5", "0 or 1 with gpus=2"),
    (["per_replica_batch=true", "gpus=2", "simulate_devices=true", "batch_size=2001"], "batch_size=2001",
     "from 1 to 2000: the training-set size 4000 divided by gpus=2"),
    (["-m", "hydra.launcher.n_jobs=abc"], "hydra.launcher.n_jobs=abc", "could not be converted to Integer"),
    (["-m", "hydra.launcher.n_jobs=0"], "hydra.launcher.n_jobs=0", "an integer >= 1"),
    (["-m", "hydra.launcher.runs_per_gpu=0"], "hydra.launcher.runs_per_gpu=0", "an integer >= 1: the GPU runs"),
    (["hydra.foo=1"], "hydra.foo=1", "Hydra's own config"),
    (["dataset=digits", "dataset.train_split=0.999"], "dataset='digits'", "dataset.train_split=0.999"),
    (["epochs=0"], "epochs=0", ">= 1"),
    (["target_tune_acc=0.8"], "target_tune_acc=0.8", "null unless tune_fraction > 0"),
    (["target_tune_acc=1.5", "tune_fraction=0.1"], "target_tune_acc=1.5", "(0, 1]"),
    (["target_tune_acc=0.8", "tune_fraction=0.1", "target_train_loss=0.1"], "target_tune_acc=0.8",
     "null when target_train_loss=0.1"),
    (["target_check=epoch"], "target_check='epoch'", "steps unless target_tune_acc is set"),
    (["target_check=call", "target_tune_acc=0.8", "tune_fraction=0.1"], "target_check='call'", "steps, epoch"),
    (["target_max_samples=1000"], "target_max_samples=1000", "null unless target_tune_acc is set"),
    (["target_max_samples=0", "target_tune_acc=0.8", "tune_fraction=0.1"], "target_max_samples=0", "an integer >= 1"),
    (["epochs=3", "pause_epoch=3"], "pause_epoch=3", "an epoch before `epochs` with budget=epochs"),
    (["pause_epoch=0"], "pause_epoch=0", "an integer >= 1"),
    (["pause_when=never"], "pause_when='never'", "always, cheaper"),
    (["budget=steps", "budget_steps=100", "pause_epoch=1"], "pause_epoch=1", "with budget=epochs"),
    (["backend=torch"], "backend='torch'", "tensorflow, jax"),
    (["backend=jax", "gpus=2"], "gpus=2", "simulate_devices=true"),
    (["backend=jax", "gpus=2", "simulate_devices=true", "model.batch_norm=true", "model.ghost_batch_size=12"],
     "model.ghost_batch_size=12", "a divisor of the per-replica batch 16 with backend=jax gpus=2"),
    (["imbalance=1.0"], "imbalance=1.0", "[0, 1)"),
    (["imbalance=-0.1"], "imbalance=-0.1", "[0, 1)"),
    (["lr=0"], "lr=0", "> 0"),
    (["lr=-0.01"], "lr=-0.01", "> 0"),
    (["optimizer=lbfgs"], "optimizer='lbfgs'", "adam, adamw, lamb, lion, muon, nadam, sgd, momentum, rmsprop"),
    (["momentum=1.0"], "momentum=1.0", "null (the optimizer's own) or a number in [0, 1)"),
    (["momentum=abc"], "momentum='abc'", "a finite number"),
    (["nesterov=true"], "nesterov=True", "false unless optimizer is sgd or momentum (optimizer=adam)"),
    (["weight_decay=-0.1"], "weight_decay=-0.1", "null (the optimizer's own) or a number >= 0"),
    (["optimizer=sgd", "nesterov=true"], "nesterov=True", "false without momentum"),
    (["optimizer=lion", "momentum=0"], "momentum=0", "(0, 1) with optimizer=lion"),
    (["lr_schedule=exponential"], "lr_schedule='exponential'", "one of constant, cosine, linear, step"),
    (["label_smoothing=1.0"], "label_smoothing=1.0", "a number in [0, 1)"),
    (["beta_2=1.0"], "beta_2=1.0", "null (the optimizer's own) or a number in [0, 1)"),
    (["epsilon=0"], "epsilon=0", "null (the optimizer's own) or a number > 0"),
    (["optimizer=sgd", "beta_2=0.99"], "beta_2=0.99", "null with optimizer=sgd, which has none (adam, adamw, lamb, "
     "lion, muon, nadam, rmsprop take one)"),
    (["optimizer=lion", "epsilon=1e-8"], "epsilon=1e-08", "null with optimizer=lion, which has none"),
    (["-m", "lr_schedule=constant,cosine", "optimizer=adam,lamb", "weight_decay=0,-1"], "weight_decay=-1", ">= 0"),
    (["shuffle=maybe"], "shuffle='maybe'", "true or false"),
    (["dataset=nope"], "dataset=nope", "mnist1d"),
    (["model=nope"], "model=nope", "convnet"),
    (["dataset=cifar10", "dataset.train_split=0.5"], "dataset.train_split=0.5", "fixed"),
    (["model.width=0"], "model.width=0", "> 0"),
    (["devices=[0,0]", "gpus=2"], "devices=[0, 0]", "distinct"),
    (["batch_size=["], "batch_size=[", "parse"),
    (["-m", "batch_size=8,0"], "batch_size=0", ">= 1"),
    (["-m", "+study=nope"], "study=nope", "smoke"),
    (["gpus=2"], "gpus=2", "simulate_devices=true"),
    (["gpus=4", "simulate_devices=true", "batch_size=30"], "batch_size=30", "multiple of gpus=4"),
    (["model.sync_batchnorm=maybe"], "model.sync_batchnorm='maybe'", "true or false"),
    (["model.ghost_batch_size=32"], "model.ghost_batch_size=32", "null unless model.batch_norm=true"),
    (["model.batch_norm=true", "model.ghost_batch_size=1"], "model.ghost_batch_size=1", "null or an integer >= 2"),
    (["model.batch_norm=true", "model.ghost_batch_size=abc"], "model.ghost_batch_size='abc'", "an integer >= 2"),
    (["model.batch_norm=true", "model.ghost_batch_size=32", "model.sync_batchnorm=true"], "model.ghost_batch_size=32",
     "null when model.sync_batchnorm=true"),
    # batch_schedule (harness.config.ramp): every bad phase names the key, before anything runs
    (["batch_schedule=[[1,32],[3,128]]"], "batch_schedule=[[1, 32], [3, 128]]", "first starts at epoch 0"),
    (["batch_schedule=[[0,32],[3,128],[3,256]]"], "batch_schedule=", "start epochs increase"),
    (["batch_schedule=[[0,32],[5,128],[3,256]]"], "batch_schedule=", "start epochs increase"),
    (["batch_schedule=[[0,32],[2.5,128]]"], "batch_schedule=[[0, 32], [2.5, 128]]", "pairs of whole numbers"),
    (["batch_schedule=[32,128]"], "batch_schedule=[32, 128]", "a list of [start_epoch, batch] pairs"),
    (["batch_schedule=[[0,32]]"], "batch_schedule=[[0, 32]]", "two or more phases"),
    (["epochs=4", "batch_schedule=[[0,32],[4,128]]"], "batch_schedule=", "a start from 0 to 3"),
    (["budget=steps", "batch_schedule=[[0,32],[2,128]]"], "batch_schedule=", "null with budget=steps"),
    (["batch_schedule=[[0,32],[2,5000]]"], "batch_schedule=", "phase 2's batch 5000 fails batch_size's rule: an "
     "integer from 1 to 4000: the training-set size 4000"),
    (["gpus=2", "simulate_devices=true", "batch_schedule=[[0,32],[2,33]]"], "batch_schedule=",
     "phase 2's batch 33 fails batch_size's rule: a multiple of gpus=2"),
    (["steps_per_execution=25", "batch_schedule=[[0,32],[2,100]]"], "batch_schedule=", "phase 2's batch 100 fails "
     "steps_per_execution's rule: 0 (a whole epoch per call) or a divisor of the 40 steps per epoch"),
    (["backend=jax", "gpus=2", "simulate_devices=true", "model.batch_norm=true", "batch_schedule=[[0,32],[2,64]]"],
     "batch_schedule=", "null with backend=jax gpus=2 and a built-in model with per-replica batch norm"),
    (["warmup_epochs=3", "batch_schedule=[[0,32],[2,128]]"], "batch_schedule=", "a first phase that holds the "
     "warm-up (warmup_epochs=3 runs past its 2 epochs)"),
    (["batch_size=64", "batch_schedule=[[0,32],[2,128]]"], "batch_size=64", "left out, or 32, beside batch_schedule="),
]


def _one_error_line(argv, capsys, tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPUs, whatever this machine has
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written
    return err


@pytest.mark.parametrize("argv,named,allowed", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_input_exits_2_with_one_line_naming_key_value_and_allowed(argv, named, allowed, capsys, tmp_path,
                                                                      monkeypatch):
    err = _one_error_line(argv, capsys, tmp_path, monkeypatch)
    assert named in err and allowed in err


def test_bad_input_is_rejected_before_tensorflow_loads(tmp_path):
    code = (
        "import sys; from harness.launch.cli import main; rc = main(['-m', 'batch_size=8,0']); "
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, 'TF loaded'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().startswith("harness: error: batch_size=0")


@pytest.mark.parametrize("batch,settings", [(500, {"imbalance": 0.9}), (800, {"imbalance": 0.5}),
                                            (400, {"train_fraction": 0.1}), (3000, {"train_fraction": 0.7}),
                                            (3800, {"tune_fraction": 0.1})])
def test_a_batch_larger_than_the_transformed_training_set_names_its_real_size(batch, settings, compose, capsys,
                                                                               tmp_path, monkeypatch):
    """The size in the message is the training set a run would really train on: MNIST-1D's real class counts
    through the same transforms (imbalance subsamples the other classes, train_fraction every class, the tuning
    slice is held out)."""
    from harness.data import registry as data
    from harness.run.inputs import prepare_data

    overrides = [f"{key}={value}" for key, value in settings.items()]
    cfg = compose(*overrides)  # the default batch size fits
    arrays = data.load(cfg.data)
    x = prepare_data(cfg).x_train
    assert len(x) < batch < len(arrays.x_train)  # too large only for the transformed set
    err = _one_error_line([f"batch_size={batch}", *overrides], capsys, tmp_path, monkeypatch)
    named = re.search(r"batch_size=(\d+) is not allowed: an integer from 1 to (\d+): the training-set size (\d+)$", err)
    assert named, err
    assert [int(n) for n in named.groups()] == [batch, len(x), len(x)]


def test_a_bad_model_key_exits_2_from_the_command_line(tmp_path):
    """The real command, as a user types it: one line on stderr, nothing run or written."""
    from tests.conftest import run_harness

    proc = run_harness("model.ghost_batch_size=32", cwd=tmp_path)
    assert proc.returncode == 2 and list(tmp_path.iterdir()) == [], proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines() == [
        "harness: error: model.ghost_batch_size=32 is not allowed: null unless model.batch_norm=true"]
