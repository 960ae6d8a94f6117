"""Device and strategy selection. The multi-replica runs are real, on a CPU split into logical devices,
each in its own process (TensorFlow's logical devices are fixed once it starts)."""
import json

import pandas as pd
import pytest

from harness.fields import ConfigError
from tests.conftest import TINY, run_harness


def test_cpu_and_single_simulated_device_strategies():
    import tensorflow as tf

    from harness.run.devices import make_strategy

    cpu = make_strategy(0, None, False)
    assert cpu.replicas == 1 and cpu.strategy is tf.distribute.get_strategy()
    one = make_strategy(1, None, True)
    assert one.replicas == 1 and isinstance(one.strategy, tf.distribute.OneDeviceStrategy)


def test_asking_for_gpus_that_are_not_there_is_refused():
    from harness.run.devices import DeviceError, make_strategy

    with pytest.raises(DeviceError, match="simulate_devices=true"):
        make_strategy(2, None, False)


def test_sync_batchnorm_builds_synchronized_layers(compose):
    from harness.models import registry as models

    cfg = compose("model.batch_norm=true", "model.sync_batchnorm=true")
    model = models.build(cfg.model, (40, 1), 10)
    norms = [layer for layer in model.layers if type(layer).__name__ == "BatchNormalization"]
    assert len(norms) == 3 and all(layer.synchronized for layer in norms)
    assert models.batchnorm_mode(cfg.model, 2) == "synchronized across replicas"
    assert models.batchnorm_mode(compose("model.batch_norm=true").model, 2) == "per replica"


def test_on_several_jax_devices_per_replica_batch_norm_is_ghost_batch_norm_of_the_per_replica_batch(
        compose, tmp_path, monkeypatch):
    """JAX's DataParallel normalises the global batch: the built-in models' per-replica statistics (the default,
    as under MirroredStrategy) are chunks of the per-replica batch; synchronized ones, a chosen ghost batch, one
    device and a user's model are built as configured."""
    from harness.models import registry as models

    per_replica = compose("model.batch_norm=true").model
    assert models.replica_model(per_replica, 2, 16, "jax").ghost_batch_size == 16
    assert models.batchnorm_mode(per_replica, 2, "jax") == ("per replica (ghost batch norm in chunks of the "
                                                            "per-replica batch)")
    synchronized = compose("model.batch_norm=true", "model.sync_batchnorm=true").model
    for unchanged, replicas, backend in [(per_replica, 2, "tensorflow"), (per_replica, 1, "jax"),
                                         (synchronized, 2, "tensorflow"),
                                         (compose("model.batch_norm=true", "model.ghost_batch_size=4").model, 2, "jax"),
                                         (compose().model, 2, "jax")]:
        assert models.replica_model(unchanged, replicas, 16, backend) == unchanged
    # Keras's synchronized layer is TensorFlow's: on JAX a plain layer normalises the global batch already
    assert models.replica_model(synchronized, 2, 16, "jax") == compose("model.batch_norm=true").model
    assert models.batchnorm_mode(compose("model.batch_norm=true", "model.sync_batchnorm=true").model, 2,
                                 "jax") == "synchronized across replicas"
    (tmp_path / "mymodels.py").write_text("def small(input_shape, num_classes):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    user = compose("model=custom", "model._target_=mymodels.small").model
    assert models.replica_model(user, 2, 16, "jax") == user
    assert models.batchnorm_mode(user, 2, "jax").startswith("over the global batch")
    # once built, a user's model says whether it has batch norm at all (run.json's batchnorm tells the truth)
    assert [models.batchnorm_mode(user, 1, layers=n) for n in (0, 2)] == ["none", "single replica"]
    assert models.batchnorm_mode(user, 2, "tensorflow", 2) == "per replica"
    assert models.batchnorm_mode(user, 2, "jax", 2) == ("over the global batch (JAX's DataParallel normalises the "
                                                        "whole batch)")
    assert models.batchnorm_mode(user, 2, "jax", 0) == "none"
    models.check_replicas(compose("model.batch_norm=true", "model.ghost_batch_size=4").model, 2, 16, "jax")
    with pytest.raises(ConfigError, match="model.ghost_batch_size=6 .* a divisor of the per-replica batch 16"):
        models.check_replicas(compose("model.batch_norm=true", "model.ghost_batch_size=6").model, 2, 16, "jax")


@pytest.mark.slow
def test_two_simulated_replicas_really_run_mirrored_with_the_batch_split(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run_harness(*TINY, "gpus=2", "simulate_devices=true", "per_replica_batch=true", "batch_size=16",
                       "model.batch_norm=true", "model.sync_batchnorm=false,true", f"hydra.sweep.dir={sweep}", "-m",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    modes = []
    for num in (0, 1):
        record = json.loads((sweep / str(num) / "run.json").read_text())
        env = record["environment"]
        assert record["status"] == "completed"
        assert env["strategy"] == "MirroredStrategy" and env["replicas"] == 2
        assert env["devices"] == ["/cpu:0", "/cpu:1"] and env["simulated_devices"] is True
        modes.append(env["batchnorm"])
        frame = pd.read_parquet(sweep / str(num) / "metrics.parquet")
        assert (frame["replicas"] == 2).all() and (frame["global_batch_size"] == 32).all()
        assert (frame["per_replica_batch_size"] == 16).all() and list(frame["step"]) == [15, 30]  # 480 / 32
        assert frame["val_acc"].iloc[-1] > 0.15
        # batch norm's statistics recomputed on a single-device copy of the mirrored model
        assert frame["val_acc_precise_bn"].between(0, 1).all() and frame["bn_initial_weight"].tolist() == [
            pytest.approx(0.99 ** 15), pytest.approx(0.99 ** 30)]
    assert modes == ["per replica", "synchronized across replicas"]


@pytest.mark.slow
def test_two_simulated_jax_devices_train_data_parallel_recorded_as_under_mirrored(tmp_path):
    """backend=jax gpus=2 simulate_devices=true: Keras's DataParallel over two host devices, with the global and
    per-replica batch in the same columns as MirroredStrategy's, per-replica or synchronized batch norm, the
    precise-BN columns and the end-of-run probes (on a single-device copy)."""
    sweep = tmp_path / "sweep"
    proc = run_harness(*[o for o in TINY if o != "probes=false"], "probe_samples=64", "backend=jax", "gpus=2",
                       "simulate_devices=true", "per_replica_batch=true", "batch_size=16", "model.batch_norm=true",
                       "model.sync_batchnorm=false,true", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    modes = []
    for num in (0, 1):
        record = json.loads((sweep / str(num) / "run.json").read_text())
        env = record["environment"]
        assert record["status"] == "completed" and "tensorflow" not in env
        assert env["strategy"] == "DataParallel" and env["replicas"] == 2
        assert env["devices"] == ["cpu:0", "cpu:1"] and env["simulated_devices"] is True
        # two runs at once on two cores get one thread each, but host devices run side by side and meet in every
        # step's all-reduce: XLA keeps its threads for them
        flags = env["cpu_threads"]["xla_flags"]
        assert "--xla_force_host_platform_device_count=2" in flags and "multi_thread_eigen=false" not in flags
        modes.append(env["batchnorm"])
        frame = pd.read_parquet(sweep / str(num) / "metrics.parquet")
        assert (frame["replicas"] == 2).all() and (frame["global_batch_size"] == 32).all()
        assert (frame["per_replica_batch_size"] == 16).all() and list(frame["step"]) == [15, 30]  # 480 / 32
        assert frame["val_acc"].iloc[-1] > 0.15 and frame["val_acc_precise_bn"].between(0, 1).all()
        probes = json.loads((sweep / str(num) / "probes.json").read_text())
        assert probes["hessian_top_eigenvalue"] > 0 and probes["sharpness"] >= 0
    assert modes == ["per replica (ghost batch norm in chunks of the per-replica batch)",
                     "synchronized across replicas"]


@pytest.mark.slow
def test_without_batch_norm_two_jax_devices_give_the_val_acc_of_one_at_the_same_global_batch(tmp_path):
    """Batch 8 on the full 4,000 training samples: 500 steps in an epoch, which deadlocked the two host devices'
    all-reduce every time while a whole epoch's steps were dispatched at once (harness.config.batching)."""
    finals = {}
    for gpus in (0, 2):
        proc = run_harness("epochs=1", "probes=false", "seed=0", "backend=jax", f"gpus={gpus}",
                           "simulate_devices=true", "batch_size=8", f"hydra.run.dir=run{gpus}", cwd=tmp_path,
                           timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        frame = pd.read_parquet(tmp_path / f"run{gpus}" / "metrics.parquet")
        assert frame["replicas"].tolist() == [max(gpus, 1)] and frame["step"].tolist() == [500]
        finals[gpus] = frame["val_acc"].iloc[-1]
    assert finals[2] == pytest.approx(finals[0], abs=1e-3), finals


@pytest.mark.slow
def test_sweeping_simulated_gpus_shows_replicas_in_the_report(tmp_path):
    sweep = tmp_path / "sweep"
    # one simulated device is OneDeviceStrategy (test_cpu_and_single_simulated_device_strategies, in-process), two
    # MirroredStrategy: replicas vary (4 replicas, as before, trained no other code path for twice the CPU, and
    # crawled when the suite's other worker held the cores: 18 to 58 s against 11 s alone)
    proc = run_harness(*TINY, "gpus=1,2", "simulate_devices=true", "batch_size=32", f"hydra.sweep.dir={sweep}",
                       "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    replicas = [json.loads((sweep / str(n) / "run.json").read_text())["environment"]["replicas"] for n in range(2)]
    assert replicas == [1, 2]
    html = (tmp_path / proc.stdout.strip().splitlines()[-1]).read_text()
    assert "Throughput vs replicas" in html and "says nothing about real GPUs" in html
    assert "gpus=1" in html and "gpus=2" in html  # one verdict/facet per device count


@pytest.mark.slow  # a process of its own: simulated devices are set once per process
def test_a_training_set_smaller_than_an_evaluation_batch_that_does_not_split_evenly_runs_mirrored(tmp_path):
    """301 training samples on 2 replicas: one uneven evaluation batch failed in Keras's evaluate ("AddN ... must
    have the same size and shape"); evaluation batches now split evenly (pipelines.evaluation_batch)."""
    proc = run_harness("dataset=digits", "train_fraction=0.21", "model=mlp", "gpus=2", "simulate_devices=true",
                       "epochs=1", "probes=false", "hydra.run.dir=run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    frame = pd.read_parquet(tmp_path / "run" / "metrics.parquet")
    assert frame["train_size"].tolist() == [301] and frame["replicas"].tolist() == [2]
    assert frame["train_eval_acc"].between(0, 1).all() and frame["val_acc"].between(0, 1).all()


def test_simulated_jax_devices_are_host_devices_set_before_jax_starts_and_fixed_after(monkeypatch):
    import os
    import sys
    import types

    from harness.run.devices import DeviceError, simulate_jax_devices

    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false --xla_force_host_platform_device_count=8")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    simulate_jax_devices(4)
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=false --xla_force_host_platform_device_count=4"
    assert os.environ["JAX_PLATFORMS"] == "cpu"  # host devices, also on a machine with a GPU
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(devices=lambda platform: ["cpu"] * 2))
    simulate_jax_devices(2)  # what this process has already
    with pytest.raises(DeviceError, match="already has 2 JAX CPU device.*cannot change to 4"):
        simulate_jax_devices(4)


def test_a_run_out_of_memory_on_a_shared_gpu_names_the_setting_to_lower(monkeypatch):
    from harness.run.devices import launcher_share, out_of_memory_hint

    class ResourceExhaustedError(Exception):  # TensorFlow's, by name; JAX's XlaRuntimeError says RESOURCE_EXHAUSTED
        pass

    monkeypatch.setenv("HARNESS_RUNS_PER_GPU", "4")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.225")
    hint = out_of_memory_hint(ResourceExhaustedError("OOM when allocating tensor with shape[64,128]"))
    assert hint.startswith("out of GPU memory on a GPU shared by 4 runs") and "hydra.launcher.runs_per_gpu" in hint
    assert out_of_memory_hint(RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate")) == hint
    assert out_of_memory_hint(ValueError("shapes do not match")) is None
    assert launcher_share()["share"]["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.225"
    monkeypatch.setenv("HARNESS_RUNS_PER_GPU", "1")  # a GPU of its own: the model or the batch is too large for it
    assert out_of_memory_hint(ResourceExhaustedError("OOM when allocating")) is None
