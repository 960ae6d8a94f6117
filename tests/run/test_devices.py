"""Device and strategy selection. The multi-replica runs are real, on a CPU split into logical devices,
each in its own process (TensorFlow's logical devices are fixed once it starts)."""
import json

import pandas as pd
import pytest

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
def test_sweeping_simulated_gpus_shows_replicas_in_the_report(tmp_path):
    sweep = tmp_path / "sweep"
    # one simulated device is OneDeviceStrategy (test_cpu_and_single_simulated_device_strategies, in-process)
    proc = run_harness(*TINY, "gpus=2,4", "simulate_devices=true", "batch_size=32", f"hydra.sweep.dir={sweep}",
                       "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    replicas = [json.loads((sweep / str(n) / "run.json").read_text())["environment"]["replicas"] for n in range(2)]
    assert replicas == [2, 4]
    html = (tmp_path / proc.stdout.strip().splitlines()[-1]).read_text()
    assert "Throughput vs replicas" in html and "says nothing about real GPUs" in html
    assert "gpus=2" in html and "gpus=4" in html  # one verdict/facet per device count


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
