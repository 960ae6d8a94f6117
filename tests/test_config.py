import subprocess
import sys

import pytest

from harness import config
from harness.cli import main, preflight


def test_defaults_compose_to_the_documented_values(compose):
    cfg = compose()
    assert cfg.data.name == "mnist1d" and cfg.model.name == "convnet"
    assert cfg.train.batch_size == 32 and cfg.train.shuffle is True and cfg.train.imbalance == 0.0
    assert cfg.device.gpus == 0 and cfg.device.devices is None and cfg.device.simulate_devices is False
    flat = cfg.flat()
    assert {"batch_size", "gpus", "shuffle", "imbalance", "seed", "dataset", "model", "dataset.num_samples",
            "model.width"} <= set(flat)


def test_overrides_and_groups_reach_the_dataclasses(compose):
    cfg = compose("batch_size=8", "dataset=digits", "model=mlp", "model.width=2", "shuffle=false",
                  "imbalance=0.5", "optimizer=momentum", "lr=0.1", "gpus=2", "devices=[0,3]")
    assert (cfg.train.batch_size, cfg.data.name, cfg.model.name, cfg.model.width) == (8, "digits", "mlp", 2.0)
    assert cfg.train.shuffle is False and cfg.train.imbalance == 0.5 and cfg.train.optimizer == "momentum"
    assert cfg.device.devices == (0, 3)


def test_sweep_expands_to_every_job_and_validates_each():
    jobs = preflight(["batch_size=8,32", "seed=0,1,2"], multirun=True)
    assert sorted((j.train.batch_size, j.train.seed) for j in jobs) == [(b, s) for b in (8, 32) for s in (0, 1, 2)]


def test_study_sweep_params_are_expanded():
    jobs = preflight(["+study=smoke"], multirun=True)
    assert [j.train.batch_size for j in jobs] == [16, 64] and all(j.train.epochs == 2 for j in jobs)


BAD = [
    (["foo=1"], "foo=1", "valid keys are"),
    (["+foo=1"], "foo=1", "valid keys are"),
    (["dataset.foo=3"], "dataset.foo=3", "dataset.num_samples"),
    (["batch_size=0"], "batch_size=0", ">= 1"),
    (["batch_size=abc"], "batch_size='abc'", "integer"),
    (["batch_size=2.5"], "batch_size=2.5", "integer"),
    (["batch_size=4001"], "batch_size=4001", "training-set size 4000"),
    (["batch_size=500", "imbalance=0.9"], "batch_size=500", "training-set size 442"),  # MNIST-1D's real classes
    (["batch_size=800", "imbalance=0.5"], "batch_size=800", "from 1 to 796"),
    (["batch_size=400", "train_fraction=0.1"], "batch_size=400", "from 1 to 399"),
    (["steps_per_execution=7", "batch_size=8"], "steps_per_execution=7", "divisor of the 500 steps per epoch"),
    (["steps_per_execution=5", "gpus=2", "simulate_devices=true"], "steps_per_execution=5", "0 or 1 with gpus=2"),
    (["per_replica_batch=true", "gpus=2", "simulate_devices=true", "batch_size=2001"], "batch_size=2001",
     "from 1 to 2000: the training-set size 4000 divided by gpus=2"),
    (["-m", "hydra.launcher.n_jobs=abc"], "hydra.launcher.n_jobs=abc", "could not be converted to Integer"),
    (["-m", "hydra.launcher.n_jobs=0"], "hydra.launcher.n_jobs=0", "an integer >= 1"),
    (["hydra.foo=1"], "hydra.foo=1", "Hydra's own config"),
    (["dataset=digits", "dataset.train_split=0.999"], "dataset='digits'", "dataset.train_split=0.999"),
    (["epochs=0"], "epochs=0", ">= 1"),
    (["imbalance=1.0"], "imbalance=1.0", "[0, 1)"),
    (["imbalance=-0.1"], "imbalance=-0.1", "[0, 1)"),
    (["lr=0"], "lr=0", "> 0"),
    (["lr=-0.01"], "lr=-0.01", "> 0"),
    (["optimizer=lbfgs"], "optimizer='lbfgs'", "adam"),
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
]


@pytest.mark.parametrize("argv,named,allowed", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_input_exits_2_with_one_line_naming_key_value_and_allowed(argv, named, allowed, capsys, tmp_path,
                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPUs, whatever this machine has
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert named in err and allowed in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_config_error_message_format():
    err = config.ConfigError("batch_size", 0, "an integer >= 1")
    assert str(err) == "batch_size=0 is not allowed: an integer >= 1"


def test_bad_input_is_rejected_before_tensorflow_loads(tmp_path):
    code = (
        "import sys; from harness.cli import main; rc = main(['-m', 'batch_size=8,0']); "
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, 'TF loaded'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().startswith("harness: error: batch_size=0")


def test_a_folder_another_command_is_running_in_is_refused(capsys, tmp_path, monkeypatch):
    """Two commands in one sweep folder would run the same runs at once, each rewriting the other's files."""
    import os

    from harness.cli import LOCK_FILE, output_folder_lock

    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "sweep"
    with output_folder_lock(sweep, "hydra.sweep.dir"):  # as a running command holds it
        assert main(["batch_size=8,32", f"hydra.sweep.dir={sweep}", "-m"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert f"hydra.sweep.dir='{sweep}' is not allowed" in err and f"process {os.getpid()} is running" in err
        assert main(["epochs=1", f"hydra.run.dir={sweep}"]) == 2  # a single run into it, too
    assert [p.name for p in sweep.iterdir()] == [LOCK_FILE]  # nothing else written
    assert [p.name for p in tmp_path.iterdir()] == ["sweep"]


def test_a_folder_is_resumed_whatever_the_order_of_the_overrides(tmp_path):
    """The same run is the same resolved config; another value is another run, and refused."""
    import json

    from harness.runlog import recorded_config

    sweep = tmp_path / "sweep"
    first = ["batch_size=8,32", "epochs=6", "dataset.num_samples=2000", f"hydra.sweep.dir={sweep}"]
    for num, run_cfg in enumerate(preflight(first, multirun=True)):
        (sweep / str(num)).mkdir(parents=True)
        overrides = [f"batch_size={run_cfg.train.batch_size}", "epochs=6", "dataset.num_samples=2000"]
        record = {"status": "completed", "config": recorded_config(run_cfg.flat()), "overrides": overrides}
        (sweep / str(num) / "run.json").write_text(json.dumps(record))
    assert len(preflight([*reversed(first)], multirun=True)) == 2
    with pytest.raises(config.ConfigError, match="ran 'batch_size=8 epochs=6 .*' but this command's run there is"):
        preflight(["batch_size=8,32", "epochs=7", "dataset.num_samples=2000", f"hydra.sweep.dir={sweep}"],
                  multirun=True)


@pytest.mark.parametrize("value", ["/tmp/a b", "/tmp/it's", "/tmp/bs\\x", "ends\\", "a\\'b", "\\\\srv\\share", "x,y"])
def test_a_folder_path_survives_quoting_as_a_hydra_override(value):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from harness.cli import quote_override

    parsed = OverridesParser.create().parse_override(f"hydra.sweep.dir={quote_override(value)}")
    assert parsed.value() == value


def test_the_pinned_folder_goes_last_among_the_overrides_wherever_the_flags_are():
    from harness.cli import with_override

    assert with_override(["-m", "a=1", "b=2"], ["a=1", "b=2"], "P") == ["-m", "a=1", "b=2", "P"]
    assert with_override(["a=1", "b=2", "-m"], ["a=1", "b=2"], "P") == ["a=1", "b=2", "P", "-m"]
    assert with_override(["-cn", "config", "a=1"], ["a=1"], "P") == ["-cn", "config", "a=1", "P"]
    assert with_override(["-m"], [], "P") == ["P", "-m"]
