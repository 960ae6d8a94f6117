"""Real (tiny) training runs through run_experiment: the files a user relies on."""
import json
import textwrap

import numpy as np
import pandas as pd
import pytest

from harness.run.experiment import run_experiment
from harness.store import layout
from tests.conftest import TINY
from tests.helpers.runs import cut_and_resumed

METRIC_COLUMNS = {
    "run_id", "epoch", "step", "train_loss", "train_acc", "train_eval_acc", "val_loss", "val_acc", "lr",
    "epoch_seconds", "samples_per_second",
}
CONFIG_COLUMNS = {
    "batch_size", "global_batch_size", "per_replica_batch_size", "replicas", "gpus", "shuffle", "imbalance",
    "seed", "dataset", "model", "optimizer", "epochs", "base_lr", "dataset.num_samples", "model.width",
}
TIMING = ["epoch_seconds", "samples_per_second"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from hydra import compose, initialize_config_dir

    from harness.config.compose import CONF_DIR, to_run_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = to_run_config(compose("config", overrides=[*TINY, "batch_size=16"]))
    run_dir = tmp_path_factory.mktemp("sweep") / "0"
    val_acc = run_experiment(cfg, run_dir, run_id="sweep/0", overrides=["batch_size=16"])
    return cfg, run_dir, val_acc


def test_metrics_parquet_has_one_row_per_epoch_with_every_column(tiny_run):
    cfg, run_dir, val_acc = tiny_run
    frame = pd.read_parquet(run_dir / "metrics.parquet")
    assert list(frame["epoch"]) == [1, 2]
    assert METRIC_COLUMNS | CONFIG_COLUMNS <= set(frame.columns)
    assert frame[["lr_schedule", "label_smoothing", "nesterov"]].iloc[0].tolist() == ["constant", 0.0, False]
    assert list(frame["step"]) == [30, 60]  # 480 samples / 16 = 30 steps per epoch
    for column in ["train_acc", "train_eval_acc", "val_acc"]:
        assert frame[column].between(0, 1).all()
    assert (frame[["train_loss", "val_loss", "epoch_seconds", "samples_per_second"]] > 0).all().all()
    assert (frame["batch_size"] == 16).all() and (frame["global_batch_size"] == 16).all()
    assert (frame["replicas"] == 1).all() and np.allclose(frame["lr"], cfg.train.lr, rtol=1e-6)
    assert frame["val_acc"].iloc[-1] == val_acc
    assert frame["val_acc"].iloc[-1] > 0.2  # learnt something beyond chance (0.1) in two epochs


def test_run_json_records_status_config_and_environment(tiny_run):
    _, run_dir, _ = tiny_run
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "completed" and record["epochs_completed"] == 2 and record["error"] is None
    assert record["run_id"] == "sweep/0" and record["overrides"] == ["batch_size=16"]
    assert record["config"]["batch_size"] == 16 and record["config"]["dataset.num_samples"] == 600
    assert record["started_at"] <= record["finished_at"]
    # the recipe in force; at its defaults it is no part of the run's identity (a sweep from before it resumes)
    assert record["recipe"] == {"momentum": None, "nesterov": False, "weight_decay": None, "lr_schedule": "constant",
                                "label_smoothing": 0.0, "beta_2": None, "epsilon": None, "precise_bn": None}
    assert not set(record["recipe"]) & set(record["config"])
    env = record["environment"]
    assert env["strategy"] == "_DefaultDistributionStrategy" and env["replicas"] == 1
    assert env["tensorflow"].startswith("2.") and env["keras"].startswith("3.")
    assert env["batch_norm"] == {"layers": 0, "momenta": []} and env["batchnorm"] == "none"


def test_run_json_says_where_the_runs_time_went(tiny_run):
    """timings: the parts are measured, none negative, and together within the run's own span; training and the
    evaluation add up to the epochs' seconds in metrics.parquet."""
    _, run_dir, _ = tiny_run
    timings = json.loads((run_dir / "run.json").read_text())["timings"]
    parts = {k: v for k, v in timings.items() if k not in ("start", "end")}
    assert {"import", "training", "evaluation", "writing"} <= set(parts) and "end_probes" not in parts  # probes off
    assert all(v >= 0 for v in parts.values()) and timings["training"] > 0 and timings["evaluation"] > 0
    assert sum(parts.values()) <= timings["end"] - timings["start"]
    frame = pd.read_parquet(run_dir / "metrics.parquet")
    training = (frame["train_size"] / frame["samples_per_second"]).sum()
    assert timings["training"] == pytest.approx(training, rel=1e-6)
    assert timings["training"] + timings["evaluation"] <= frame["epoch_seconds"].sum()


def test_same_config_and_seed_give_identical_metrics(tiny_run, tmp_path):
    cfg, run_dir, _ = tiny_run
    run_experiment(cfg, tmp_path / "again", run_id="sweep/0", overrides=["batch_size=16"])
    first = pd.read_parquet(run_dir / "metrics.parquet").drop(columns=TIMING)
    second = pd.read_parquet(tmp_path / "again" / "metrics.parquet").drop(columns=TIMING)
    pd.testing.assert_frame_equal(first, second, check_exact=True)


def test_another_seed_gives_other_metrics(tiny_run, tmp_path):
    cfg, run_dir, _ = tiny_run
    import dataclasses

    other = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, seed=1))
    run_experiment(other, tmp_path / "seed1", run_id="sweep/1")
    a = pd.read_parquet(run_dir / "metrics.parquet")["train_loss"].to_numpy()
    b = pd.read_parquet(tmp_path / "seed1" / "metrics.parquet")["train_loss"].to_numpy()
    assert not np.array_equal(a, b)


def test_imbalanced_unshuffled_run_trains_on_the_transformed_split(compose, tmp_path):
    from harness.data import registry as data

    cfg = compose(*TINY, "epochs=1", "shuffle=false", "imbalance=0.5")
    run_experiment(cfg, tmp_path / "a", run_id="s/0")
    frame = pd.read_parquet(tmp_path / "a" / "metrics.parquet")
    assert not frame["shuffle"].any() and (frame["imbalance"] == 0.5).all()
    class_0 = int(np.sum(data.load(cfg.data).y_train == 0))
    assert frame["train_size"].iloc[0] == 2 * class_0  # class 0 is half of the imbalanced training set


def test_nan_loss_stops_the_run_as_diverged(compose, tmp_path):
    cfg = compose(*TINY, "epochs=3", "optimizer=sgd", "lr=1e12", "model=mlp")
    run_experiment(cfg, tmp_path / "d", run_id="s/0")
    record = json.loads((tmp_path / "d" / "run.json").read_text())
    assert record["status"] == "diverged"
    assert record["epochs_completed"] < 3


def test_a_failing_run_is_recorded_then_raised(compose, tmp_path, monkeypatch):
    from harness.data import registry as data

    def broken(*args):
        raise OSError("disk on fire")

    import dataclasses

    cfg = compose(*TINY)  # validated first: validating a data set whose cache is empty loads it
    monkeypatch.setitem(data.DATASETS, "mnist1d", dataclasses.replace(data.DATASETS["mnist1d"], load=broken))
    with pytest.raises(OSError):
        run_experiment(cfg, tmp_path / "f", run_id="s/0")
    record = json.loads((tmp_path / "f" / "run.json").read_text())
    assert record["status"] == "failed" and record["finished_at"]
    assert record["error"]["type"] == "OSError" and record["error"]["message"] == "disk on fire"
    assert "Traceback" in record["error"]["traceback"]
    assert not (tmp_path / "f" / "metrics.parquet").exists()


def test_an_interrupted_run_resumes_from_its_checkpoint_with_identical_metrics(compose, tmp_path, backend):
    """On each backend: the checkpoint holds the weights and the optimizer's state, and the resumed epochs see the
    batches an uninterrupted run would (the stateless per-epoch order)."""
    cfg = compose(*TINY, "epochs=3", "batch_size=32", f"backend={backend}")
    pd.testing.assert_frame_equal(*cut_and_resumed(cfg, tmp_path), check_exact=True)


@pytest.mark.parametrize("recipe", [
    ("lr_schedule=cosine", "optimizer=adamw", "warmup_epochs=1", "label_smoothing=0.1"),
    ("lr_schedule=linear", "optimizer=lamb", "weight_decay=0.01"),
    ("lr_schedule=step", "optimizer=momentum", "nesterov=true", "momentum=0.8"),
], ids=["cosine", "linear", "step"])
def test_a_run_with_a_schedule_resumes_as_an_uninterrupted_one(compose, tmp_path, recipe):
    """The schedule is a function of the optimizer's step count, which the checkpoint holds with its moments and
    decay: the resumed epochs' learning rates and metrics are the uninterrupted run's."""
    cfg = compose(*TINY, "epochs=4", "batch_size=32", *recipe)
    resumed, whole = cut_and_resumed(cfg, tmp_path)
    pd.testing.assert_frame_equal(resumed, whole, check_exact=True)
    assert whole["lr"].nunique() > 1 and whole["lr_schedule"].tolist() == [cfg.train.lr_schedule] * 4


@pytest.mark.parametrize("recipe", [("lr_schedule=cosine", "warmup_epochs=1"), ("batch_schedule=[[0,16],[2,64]]",)],
                         ids=["cosine", "ramp"])
def test_a_paused_run_continued_from_its_fork_has_the_epochs_of_one_run_straight_through(compose, tmp_path, recipe):
    """pause_epoch stops after that epoch with the schedule planned over every epoch and keeps the checkpoint;
    the fork (a study's next rung) continues it in another folder to the epochs of the run trained whole, while the
    paused run stays as it was. Without the schedule planned over `epochs`, the cosine's learning rates would
    differ; without the checkpoint kept, the continued run would start again."""
    from harness.store.fork import fork

    whole = compose(*TINY, "epochs=4", "batch_size=16", *recipe)
    run_experiment(whole, tmp_path / "s" / "0", run_id="s/0")
    paused = compose(*TINY, "epochs=4", "batch_size=16", "pause_epoch=2", *recipe)
    run_experiment(paused, tmp_path / "s" / "1", run_id="s/1", overrides=["pause_epoch=2"])
    first = json.loads((tmp_path / "s" / "1" / "run.json").read_text())
    assert first["status"] == "paused" and first["paused_at_epoch"] == 2
    assert (tmp_path / "s" / "1" / layout.CHECKPOINT).exists()
    assert first["config"] == json.loads((tmp_path / "s" / "0" / "run.json").read_text())["config"]
    assert run_experiment(paused, tmp_path / "s" / "1", run_id="s/1") is not None  # a resume leaves it alone

    assert fork(tmp_path / "s" / "1", tmp_path / "s" / "2")
    assert not fork(tmp_path / "s" / "1", tmp_path / "s" / "2")  # made once
    run_experiment(whole, tmp_path / "s" / "2", run_id="s/2")
    continued = json.loads((tmp_path / "s" / "2" / "run.json").read_text())
    assert continued["status"] == "completed" and continued["resumed_from_epoch"] == 2
    assert continued["notes"] == ["continued from s/1, paused after epoch 2"]
    rows = pd.read_parquet(tmp_path / "s" / "2" / "metrics.parquet").drop(columns=TIMING)
    straight = pd.read_parquet(tmp_path / "s" / "0" / "metrics.parquet").drop(columns=TIMING)
    assert rows["run_id"].tolist() == ["s/2"] * 4 and "pause_epoch" not in rows
    pd.testing.assert_frame_equal(rows.drop(columns="run_id"), straight.drop(columns="run_id"), check_exact=True)
    assert pd.read_parquet(tmp_path / "s" / "1" / "metrics.parquet")["epoch"].tolist() == [1, 2]
    assert json.loads((tmp_path / "s" / "1" / "run.json").read_text())["status"] == "paused"


@pytest.mark.parametrize("pays", [True, False])
def test_pause_when_cheaper_pauses_only_where_its_estimate_says_so_and_the_numbers_are_the_same(compose, tmp_path,
                                                                                               monkeypatch, pays):
    """pause_when=cheaper: the run measures what continuing later would cost against the epochs left (the estimate
    is fixed here, so that no clock decides the test) and pauses, or trains on to the end in the same process with
    the metrics of a run trained straight through."""
    from harness.run import pause

    monkeypatch.setattr(pause.Estimate, "pays", property(lambda self: pays))
    straight = compose(*TINY, "epochs=3", "batch_size=16", "lr_schedule=cosine")
    run_experiment(straight, tmp_path / "s" / "0", run_id="s/0")
    cfg = compose(*TINY, "epochs=3", "batch_size=16", "lr_schedule=cosine", "pause_epoch=2", "pause_when=cheaper")
    run_experiment(cfg, tmp_path / "s" / "1", run_id="s/1")
    found = json.loads((tmp_path / "s" / "1" / "run.json").read_text())
    assert found["status"] == ("paused" if pays else "completed") and found["pause"]["pays"] is pays
    assert found["pause"]["epochs_left"] == 1 and found["pause"]["set_up"] > 0
    assert (tmp_path / "s" / "1" / layout.CHECKPOINT).exists() is pays
    rows = pd.read_parquet(tmp_path / "s" / "1" / "metrics.parquet").drop(columns=[*TIMING, "run_id"])
    whole = pd.read_parquet(tmp_path / "s" / "0" / "metrics.parquet").drop(columns=[*TIMING, "run_id"])
    pd.testing.assert_frame_equal(rows, whole.iloc[:len(rows)], check_exact=True)
    assert len(rows) == (2 if pays else 3)


def test_a_run_that_did_not_pause_and_was_killed_later_resumes_to_its_end(compose, tmp_path, monkeypatch):
    """pause_when=cheaper went on past pause_epoch 1, and was killed after epoch 3's row, before its checkpoint: it
    resumes at epoch 2, past its pause_epoch, and trains to the end (not a run of 2 epochs recorded as completed),
    with the metrics of a run trained straight through."""
    from harness.run import pause, train

    monkeypatch.setattr(pause.Estimate, "pays", property(lambda self: False))
    straight = compose(*TINY, "epochs=3", "batch_size=32", "lr_schedule=cosine")
    run_experiment(straight, tmp_path / "s" / "0", run_id="s/0")
    cfg = compose(*TINY, "epochs=3", "batch_size=32", "lr_schedule=cosine", "pause_epoch=1", "pause_when=cheaper")
    original = train.EpochRecorder.on_epoch_end

    def killed(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 2:
            raise KeyboardInterrupt  # after epoch 3's row, before its checkpoint: the run resumes at epoch 2

    monkeypatch.setattr(train.EpochRecorder, "on_epoch_end", killed)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, tmp_path / "s" / "1", run_id="s/1")
    monkeypatch.setattr(train.EpochRecorder, "on_epoch_end", original)
    run_experiment(cfg, tmp_path / "s" / "1", run_id="s/1")
    found = json.loads((tmp_path / "s" / "1" / "run.json").read_text())
    assert found["status"] == "completed" and found["resumed_from_epoch"] == 2 and found["epochs_completed"] == 3
    rows = pd.read_parquet(tmp_path / "s" / "1" / "metrics.parquet").drop(columns=[*TIMING, "run_id"])
    whole = pd.read_parquet(tmp_path / "s" / "0" / "metrics.parquet").drop(columns=[*TIMING, "run_id"])
    pd.testing.assert_frame_equal(rows, whole, check_exact=True)


def test_a_pause_pays_where_the_set_up_and_compile_are_less_than_the_epochs_left():
    from harness.run.pause import estimate

    small_model = estimate(set_up=0.6, epoch_seconds=[0.5, 0.07, 0.07], fit_wall=0.9, epochs_left=2)
    assert small_model.compile == pytest.approx(0.43) and not small_model.pays  # 1.03 s against 2 x 0.157 s
    big_model = estimate(set_up=20.0, epoch_seconds=[700.0, 600.0, 610.0], fit_wall=1950.0, epochs_left=3)
    assert big_model.pays and big_model.per_epoch == pytest.approx((1950.0 - 95.0) / 3)
    one = estimate(0.05, [0.5], 0.6, 1)  # one epoch: its training all counts as compile, an epoch as its passes
    assert one.compile == 0.5 and one.per_epoch == pytest.approx(0.1) and not one.pays  # 0.55 s against 0.1 s
    assert estimate(0.05, [0.5], 0.6, 9).pays  # 0.55 s against 9 x 0.1 s


def test_same_seed_same_backend_same_numbers_and_another_seed_others(compose, tmp_path, backend):
    """Two runs of one config in one process (as a warm worker runs them) agree bit for bit, on each backend; the
    recomputed batch-norm statistics included (the probes are functions of the weights, checked on closed forms)."""
    runs = {}
    for name, seed in (("a", 0), ("b", 0), ("other", 1)):
        cfg = compose(*TINY, "epochs=1", "batch_size=16", "model.batch_norm=true", f"seed={seed}",
                      f"backend={backend}")
        run_experiment(cfg, tmp_path / name, run_id="s/0")
        runs[name] = pd.read_parquet(tmp_path / name / "metrics.parquet").drop(columns=TIMING)
        assert json.loads((tmp_path / name / "run.json").read_text())["environment"]["backend"] == backend
    assert runs["a"]["backend"].tolist() == [backend]
    pd.testing.assert_frame_equal(runs["a"], runs["b"], check_exact=True)
    assert not np.allclose(runs["a"]["val_loss"], runs["other"]["val_loss"])
    assert {"val_acc_precise_bn", "bn_initial_weight"} <= set(runs["a"].columns)


def test_a_finished_run_is_left_alone_and_a_different_one_is_refused(compose, tmp_path):
    cfg = compose(*TINY, "epochs=1")
    first = run_experiment(cfg, tmp_path / "r", run_id="s/0")
    files = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "r").iterdir()}
    assert run_experiment(cfg, tmp_path / "r", run_id="s/0") == first
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "r").iterdir()} == files
    with pytest.raises(ValueError, match="another run"):
        run_experiment(compose(*TINY, "epochs=1", "batch_size=64"), tmp_path / "r", run_id="s/0")


def test_the_fast_path_gives_the_same_metrics_as_one_step_per_call(compose, tmp_path):
    """steps_per_execution=0 (a whole epoch per compiled call) against Keras's default of one step per call."""
    frames = []
    for steps in (0, 1):
        cfg = compose(*TINY, "batch_size=16", f"steps_per_execution={steps}")
        run_experiment(cfg, tmp_path / str(steps), run_id="s/0")
        frames.append(pd.read_parquet(tmp_path / str(steps) / "metrics.parquet").drop(
            columns=TIMING + ["steps_per_execution"]))
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)


RUN_IN_FRESH_PROCESS = """
import gc, json, sys
from pathlib import Path
{setup}
from harness.launch.cli import main
code = main(["dataset.num_samples=600", "epochs=1", "hydra.run.dir=" + sys.argv[1]])
heavy = ["sklearn", "matplotlib", "h5py", "scipy.stats", "jax"]
print(json.dumps({{"code": code, "loaded": [name for name in heavy if name in sys.modules],
                  "frozen": gc.get_freeze_count(), "collecting": gc.isenabled()}}))
"""


def _run_in_fresh_process(tmp_path, setup: str = "") -> dict:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", RUN_IN_FRESH_PROCESS.format(setup=setup), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a run in a fresh process
def test_a_run_process_loads_none_of_the_packages_it_does_not_use(compose, tmp_path):
    """Start-up cost: Keras would load scikit-learn (with scipy.stats) and matplotlib, TensorFlow h5py and JAX
    (installed here, as with the jax extra); and the garbage collector passes over TensorFlow's objects in every
    full collection unless they are frozen once loaded (0.45 s of a batch-8 run)."""
    from harness.data import registry as data

    data.load(compose(*TINY).data)  # cached, as for every run but the first (generating MNIST-1D loads matplotlib)
    result = _run_in_fresh_process(tmp_path)
    assert result["code"] == 0 and result["loaded"] == []
    assert result["frozen"] > 100_000 and result["collecting"]  # TensorFlow's objects frozen, the collector back on
    assert pd.read_parquet(tmp_path / "run" / "metrics.parquet")["epoch"].tolist() == [1]
    # hidden only while TensorFlow loads: they import as usual afterwards, in the same process
    # a process that had paused the collector finds it paused still; what loads after Keras, once a model may
    # exist, is not frozen (a frozen model's reference cycles would never be collected)
    check = ("import gc; gc.disable(); import harness.backend; k = harness.backend.keras; "
             "import sklearn.base, matplotlib.pyplot, h5py, jax; assert not gc.isenabled(); "
             "frozen = gc.get_freeze_count(); model = k.Sequential([k.layers.Dense(2)]); harness.backend.tf; "
             "assert gc.get_freeze_count() == frozen; print(k.__version__, k.backend.backend())")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().startswith("3.") and proc.stdout.strip().endswith(
        " tensorflow"), proc.stderr[-2000:]


JAX_RUNS_IN_FRESH_PROCESS = """
import json, sys
from harness.launch.cli import main
mnist1d = main(["dataset.num_samples=600", "epochs=2", "backend=jax", "model.batch_norm=true", "tune_fraction=0.2",
                "target_tune_acc=0.99", "probe_samples=64", "hydra.run.dir=" + sys.argv[1]])
own = main(["dataset=npz", "dataset.path=" + sys.argv[2], "model=custom", "model._target_=usermodels.small",
            "+model.units=12", "batch_size=8", "epochs=2", "probes=false", "backend=jax",
            "hydra.run.dir=" + sys.argv[3]])
print(json.dumps({"codes": [mnist1d, own], "tensorflow": sorted(m for m in sys.modules
                                                               if m.split(".")[0] == "tensorflow")}))
"""


@pytest.mark.slow  # runs in a fresh process
def test_a_jax_run_process_never_imports_tensorflow(tmp_path):
    """backend=jax on MNIST-1D (numpy batches, the probes, batch-norm statistics, the within-epoch target checks,
    the checkpoint and TensorBoard's files), then the user's npz with their own model from the working directory
    (plain Keras: the same function builds it on either backend): not one TensorFlow module in the process."""
    import subprocess
    import sys

    from tests.e2e.test_own_data import USER_MODELS
    from tests.helpers.user_data import write_npz

    write_npz(tmp_path / "animals.npz", np.repeat(["wolf", "bear", "fox"], 40), features=6)
    (tmp_path / "usermodels.py").write_text(textwrap.dedent(USER_MODELS))
    runs = {"mnist1d": tmp_path / "run", "own": tmp_path / "own"}
    proc = subprocess.run([sys.executable, "-c", JAX_RUNS_IN_FRESH_PROCESS, str(runs["mnist1d"]),
                           str(tmp_path / "animals.npz"), str(runs["own"])],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"codes": [0, 0], "tensorflow": []}
    for run in runs.values():
        record = json.loads((run / "run.json").read_text())
        assert record["status"] == "completed" and record["environment"]["backend"] == "jax"
        assert "tensorflow" not in record["environment"] and record["environment"]["jax"]
        assert list((run / "tb").glob("events.out.tfevents.*"))
    assert json.loads((runs["mnist1d"] / "probes.json").read_text())["error"] is None
    reached = json.loads((runs["mnist1d"] / "target.json").read_text())
    assert reached["target_checks"] > 2
    record = json.loads((runs["mnist1d"] / "run.json").read_text())
    assert record["seconds_to_target"] == reached["seconds_to_target"]  # run.json says it too (null: missed)
    hardware = record["environment"]["hardware"]
    assert hardware["cpu_count"] >= hardware["cpus_usable"] >= 1 and hardware["cpu_model"] and hardware["gpus"] == []
    record = json.loads((runs["own"] / "run.json").read_text())
    assert record["environment"]["classes"] == ["bear", "fox", "wolf"] and record["config"]["model.units"] == 12
    assert (tmp_path / "calls.txt").read_text() == "(6, 1) 3 12\n"  # their function, called once
    metrics = pd.read_parquet(runs["own"] / "metrics.parquet")
    assert metrics["epoch"].tolist() == [1, 2] and set(metrics["train_size"]) == {32 * 3}


@pytest.mark.slow  # a run in a fresh process
def test_a_run_whose_tensorflow_cannot_load_is_recorded_as_failed(tmp_path):
    result = _run_in_fresh_process(tmp_path, setup="sys.modules['tensorflow'] = None  # as if not installed")
    assert result["code"] == 1
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["status"] == "failed" and record["error"]["type"] == "ModuleNotFoundError"
    assert "tensorflow" in record["error"]["message"]


def test_tiny_inputs_keep_one_intra_op_thread_whatever_the_launcher_allows(compose, monkeypatch):
    from harness.run.devices import cpu_threads

    monkeypatch.delenv("HARNESS_THREADS", raising=False)
    assert cpu_threads(compose("dataset=mnist1d")) == (1, None)
    assert cpu_threads(compose("dataset=cifar10")) == (None, None)  # TensorFlow's default for larger inputs
    monkeypatch.setenv("HARNESS_THREADS", "2")  # the launcher's share of the cores for one run at a time
    assert cpu_threads(compose("dataset=mnist1d")) == (1, 2)
    assert cpu_threads(compose("dataset=cifar10")) == (2, 2)


def test_throughput_counts_the_samples_of_an_epoch_cut_short_by_a_step_budget(compose, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from harness.run import train

    ticks = iter(range(10_000))
    monkeypatch.setattr(train, "time", SimpleNamespace(perf_counter=lambda: float(next(ticks))))  # 1 s per call
    cfg = compose(*TINY, "batch_size=32", "budget=steps", "budget_steps=20")  # 15 steps per epoch, then 5
    run_experiment(cfg, tmp_path / "r", run_id="s/0")
    metrics = pd.read_parquet(tmp_path / "r" / "metrics.parquet")
    assert metrics["step"].tolist() == [15, 20]
    assert metrics["samples_per_second"].tolist() == [480.0, 160.0]  # samples over the 1 s of training


def test_a_jax_run_that_loaded_tensorflow_after_all_names_its_version(monkeypatch):
    """run.json's environment names TensorFlow on JAX only when the run process loaded it (image files)."""
    import sys

    from harness import backend

    assert backend.tensorflow_loaded_on_jax() == {}  # Keras on TensorFlow here: its version is recorded anyway
    monkeypatch.setattr(backend, "loaded_backend", lambda: "jax")  # read through the module's globals
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    assert backend.tensorflow_loaded_on_jax() == {}
    monkeypatch.setitem(sys.modules, "tensorflow", type(sys)("tensorflow"))
    sys.modules["tensorflow"].__version__ = "2.99"
    assert backend.tensorflow_loaded_on_jax() == {"tensorflow": "2.99"}


@pytest.mark.parametrize("signum", [2, 15])  # SIGINT (Ctrl-C), SIGTERM
def test_a_signal_whose_exception_a_library_swallowed_stops_the_run_once_its_next_epoch_is_saved(compose, tmp_path,
                                                                                                 signum):
    """The handler raises at once and records the signal (harness.run.stop). Where a library catches the exception
    (a Ctrl-C while TensorFlow traced the model was lost, and the run trained to its end), the run raises it again
    once its next epoch is saved: interrupted, with the signal's exit code, and resumed from that epoch."""
    from harness.launch import signals
    from harness.run import checkpoint, stop

    try:
        signals._raise(signum, None)
    except KeyboardInterrupt:
        pass  # swallowed, as a library might
    cfg = compose(*TINY, "epochs=3")
    with pytest.raises(KeyboardInterrupt) as stopped:
        run_experiment(cfg, tmp_path / "r", run_id="s/0")
    assert signals.exit_code(stopped.value)[0] == 128 + signum
    record = json.loads((tmp_path / "r" / "run.json").read_text())
    assert record["status"] == "interrupted" and record["epochs_completed"] == 1
    assert checkpoint.saved_epoch(tmp_path / "r") == 1 and stop.requested is None
    run_experiment(cfg, tmp_path / "r", run_id="s/0")  # acted on once: the same run resumes and completes
    record = json.loads((tmp_path / "r" / "run.json").read_text())
    assert record["status"] == "completed" and record["resumed_from_epoch"] == 1


def test_a_signal_that_a_library_turned_into_another_exception_records_interrupted_not_failed(compose, tmp_path,
                                                                                              monkeypatch):
    """SIGINT (the launcher forwards SIGTERM as it) while TensorFlow was being imported reached the run as
    ImportError("initialization failed"), and the run was recorded failed, its worker left waiting. The signal asked
    for decides: interrupted, a note naming what it reached the run as, and the interruption raised for the worker;
    the same error with no signal asked for is a failure."""
    import signal

    from harness.run import devices, stop

    def importing(*args):
        stop.ask(signal.SIGINT)
        raise ImportError("initialization failed")

    monkeypatch.setattr(devices, "place", importing)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(compose(*TINY), tmp_path / "cut", run_id="s/0")
    record = json.loads((tmp_path / "cut" / "run.json").read_text())
    assert record["status"] == "interrupted" and stop.requested is None
    assert record["notes"] == ["interrupted by SIGINT, which reached the run as ImportError: initialization failed"]
    monkeypatch.setattr(devices, "place", lambda *args: (_ for _ in ()).throw(ImportError("initialization failed")))
    with pytest.raises(ImportError):
        run_experiment(compose(*TINY), tmp_path / "broken", run_id="s/0")
    assert json.loads((tmp_path / "broken" / "run.json").read_text())["status"] == "failed"


def test_an_interrupted_run_that_a_study_times_alone_starts_again_from_epoch_0(compose, tmp_path, monkeypatch):
    """A run the sweep's plan runs alone (+study=choose's: its seconds to the target are a judging seed's time) is
    not resumed from its checkpoint: resumed, its time would count from the resume only. It starts over, says so,
    and its metrics are a whole run's."""
    from harness.run import checkpoint, train
    from harness.store import sweep_file

    cfg = compose(*TINY, "epochs=3", "batch_size=32")
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"format": sweep_file.FORMAT, "study": None, "rounds": 1, "jobs": [
        {"job": "0", "overrides": [], "config": "x", "alone": True}]}))
    original = train.EpochRecorder.on_epoch_end

    def interrupt(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 1:
            raise KeyboardInterrupt  # after the second epoch's row, before its checkpoint

    monkeypatch.setattr(train.EpochRecorder, "on_epoch_end", interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, sweep / "0", run_id="s/0")
    assert checkpoint.saved_epoch(sweep / "0") == 1
    monkeypatch.setattr(train.EpochRecorder, "on_epoch_end", original)
    run_experiment(cfg, sweep / "0", run_id="s/0")
    record = json.loads((sweep / "0" / "run.json").read_text())
    assert record["status"] == "completed" and record["resumed_from_epoch"] is None
    assert any("timed alone" in note and "started again from epoch 0" in note for note in record["notes"])
    assert pd.read_parquet(sweep / "0" / "metrics.parquet")["epoch"].tolist() == [1, 2, 3]
