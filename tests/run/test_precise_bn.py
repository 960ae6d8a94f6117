"""Batch-norm statistics recomputed for the current weights (harness.run.precise_bn): they recover what stale moving
averages hide, they agree with recomputing each layer exactly in inference mode, they leave the model (and so
training) exactly as it was, and only a model with batch norm pays for them."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

from harness.backend import keras
from harness.models import registry as models
from harness.run import measures, precise_bn, train
from harness.run.experiment import run_experiment
from tests.conftest import TINY, compose_config
from tests.helpers import backends

PRECISE_COLUMNS = set(precise_bn.COLUMNS)
TIMING = ["epoch_seconds", "samples_per_second"]


@pytest.fixture(scope="module")
def stale(backend):
    """The harness's convnet with batch norm after 50 steps of batch 64 at Keras's momentum 0.99 (0.99^50 = 0.61
    of the initial statistics left): its weights have learnt something, its moving averages have not. On each
    backend (the compiled passes are the backend's own)."""
    from harness.run.inputs import prepare_data

    if not backends.here(backend):  # the case runs in a child pytest on its backend
        return None
    cfg = compose_config("dataset.num_samples=2000", "model.batch_norm=true", "batch_size=64")
    data = prepare_data(cfg)
    keras.utils.set_random_seed(0)
    model = models.build(cfg.model, data.input_shape, data.num_classes)
    train.compile_model(model, keras.optimizers.Adam(3e-3))
    model.fit(data.x_train, data.y_train, batch_size=64, epochs=2, verbose=0, shuffle=False)
    return model, data


def _accuracy(model, x, y) -> float:
    return measures.classification_metrics(model.predict(x, batch_size=1024, verbose=0), y)[1]


def test_recomputed_statistics_recover_the_accuracy_and_the_model_is_restored_bit_for_bit(stale):
    model, data = stale
    measure = precise_bn.PreciseBatchNorm(model, data.x_train, data.y_train)
    assert len(measure.layers) == 3 and measure.initial_weight(50) == pytest.approx(0.99 ** 50)
    before = [np.array(v.numpy(), copy=True) for v in model.variables]
    moving = _accuracy(model, data.x_val, data.y_val)
    with measure.recomputed() as recomputed:
        assert recomputed is model  # one device: in place
        fixed = _accuracy(recomputed, data.x_val, data.y_val)
        changed = [layer.moving_mean.numpy() for layer in measure.layers]
    assert moving < 0.35 and fixed > moving + 0.3, (moving, fixed)  # near chance, then what the weights can do
    assert not np.array_equal(changed[0], before[[id(v) for v in model.variables].index(id(measure.layers[0].moving_mean))])
    after = [v.numpy() for v in model.variables]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))  # weights and statistics, bit for bit
    assert [layer.momentum for layer in measure.layers] == [0.99] * 3
    assert _accuracy(model, data.x_val, data.y_val) == moving


def _exact_layer_by_layer(model, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The other estimator: each layer's inputs computed in inference mode with the layers before it already
    recomputed, in order, their mean and (biased) variance over the samples and spatial axes."""
    layers = precise_bn.batch_norm_layers(model)
    inputs = keras.Model(model.inputs, [layer.input for layer in layers])
    found = []
    for k, layer in enumerate(layers):
        values = np.asarray(inputs.predict(x, batch_size=1024, verbose=0)[k], dtype=np.float64)
        axes = tuple(range(values.ndim - 1))
        layer.moving_mean.assign(values.mean(axes).astype(np.float32))
        layer.moving_variance.assign(values.var(axes).astype(np.float32))
        found.append((values.mean(axes), values.var(axes)))
    return found


def test_the_statistics_are_the_exact_ones_recomputed_layer_by_layer_in_inference_mode(stale):
    model, data = stale
    measure = precise_bn.PreciseBatchNorm(model, data.x_train, data.y_train)
    with measure.recomputed():
        ours = [(layer.moving_mean.numpy(), layer.moving_variance.numpy()) for layer in measure.layers]
        ours_acc = _accuracy(model, data.x_val, data.y_val)
    saved = [np.array(v.numpy(), copy=True) for v in model.non_trainable_variables]
    subset = data.x_train[precise_bn.subset_indices(len(data.x_train))]
    exact = _exact_layer_by_layer(model, subset)
    exact_acc = _accuracy(model, data.x_val, data.y_val)
    for variable, value in zip(model.non_trainable_variables, saved):
        variable.assign(value)
    # the subset is one training-mode batch: every layer is normalised with its inputs' subset statistics while
    # the next is measured, which is what the exact estimator does layer by layer; only float32 rounding differs
    for (mean, var), (exact_mean, exact_var) in zip(ours, exact):
        np.testing.assert_allclose(mean, exact_mean, rtol=1e-4, atol=1e-4 * np.sqrt(exact_var).max())
        np.testing.assert_allclose(var, exact_var, rtol=1e-4)
    assert ours_acc == exact_acc


def test_bn_momentum_is_set_on_every_batch_norm_layer_of_any_model(compose):
    plain = compose("model.batch_norm=true", "model.bn_momentum=0.9")
    ghost = compose("model.batch_norm=true", "model.ghost_batch_size=8", "model.bn_momentum=0.5")
    application = compose("model=application", "model.name=MobileNetV2", "dataset=cifar10", "model.bn_momentum=0.9",
                          "+model.alpha=0.35")
    for cfg, shape, momentum, count in [(plain, (40, 1), 0.9, 3), (ghost, (40, 1), 0.5, 3),
                                        (application, (32, 32, 3), 0.9, 52)]:
        model = models.build(cfg.model, shape, 10)
        layers = precise_bn.batch_norm_layers(model)
        assert len(layers) == count and {layer.momentum for layer in layers} == {momentum}
    untouched = models.build(compose("model.batch_norm=true").model, (40, 1), 10)
    assert {layer.momentum for layer in precise_bn.batch_norm_layers(untouched)} == {0.99}  # Keras's own


def test_a_run_with_batch_norm_records_recomputed_accuracies_and_trains_exactly_as_without(compose, tmp_path,
                                                                                          monkeypatch):
    """The measurement changes no training number; neither does model.bn_momentum (only the moving averages)."""
    traced = []
    original = precise_bn.PreciseBatchNorm._moments_function
    monkeypatch.setattr(precise_bn.PreciseBatchNorm, "_moments_function",
                        lambda self, *a: traced.append(original(self, *a)) or traced[-1])
    cfg = compose("dataset.num_samples=2000", "probes=false", "seed=0", "model.batch_norm=true", "batch_size=64",
                  "lr=0.003", "epochs=2")
    run_experiment(cfg, tmp_path / "with", run_id="s/0")
    measured = pd.read_parquet(tmp_path / "with" / "metrics.parquet")
    assert PRECISE_COLUMNS <= set(measured.columns)
    assert measured["bn_initial_weight"].tolist() == pytest.approx([0.99 ** 25, 0.99 ** 50])
    assert measured["val_acc_precise_bn"].iloc[-1] > measured["val_acc"].iloc[-1] + 0.2  # 50 steps: stale averages
    assert (measured["train_eval_acc_precise_bn"] > measured["train_eval_acc"]).all()
    assert len(traced) == 2 and traced[0] is traced[1] and traced[0].compiled.experimental_get_tracing_count() == 1
    # another momentum changes only what the moving averages hold: training mode normalises with batch statistics
    lower = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, bn_momentum=0.9))
    run_experiment(lower, tmp_path / "lower", run_id="s/0")
    other = pd.read_parquet(tmp_path / "lower" / "metrics.parquet")
    same = ["train_loss", "train_acc", "train_eval_acc_precise_bn", "val_acc_precise_bn", "val_loss_precise_bn"]
    pd.testing.assert_frame_equal(other[same], measured[same], check_exact=True)
    assert (other["val_acc"] > measured["val_acc"]).all()  # 0.9^25 of the start left, not 0.99^25
    monkeypatch.setattr(precise_bn, "of_run", lambda *args, **kwargs: None)
    run_experiment(cfg, tmp_path / "without", run_id="s/0")
    plain = pd.read_parquet(tmp_path / "without" / "metrics.parquet")
    assert not PRECISE_COLUMNS & set(plain.columns)
    pd.testing.assert_frame_equal(measured[plain.columns].drop(columns=TIMING), plain.drop(columns=TIMING),
                                  check_exact=True)


def test_a_model_without_batch_norm_gets_no_columns_and_no_measurement(compose, tmp_path, monkeypatch):
    built = []
    original = precise_bn.PreciseBatchNorm.__init__
    monkeypatch.setattr(precise_bn.PreciseBatchNorm, "__init__",
                        lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    run_experiment(compose(*TINY, "epochs=1"), tmp_path / "r", run_id="s/0")
    assert not PRECISE_COLUMNS & set(pd.read_parquet(tmp_path / "r" / "metrics.parquet").columns)
    assert built == []


@pytest.mark.parametrize("value", ["0", "1", "1.5", "-0.1", "true", "fast"])
def test_a_bad_bn_momentum_is_one_line_naming_the_key(value, compose):
    from harness.config.schema import ConfigError

    with pytest.raises(ConfigError) as err:
        compose("model.batch_norm=true", f"model.bn_momentum={value}")
    assert str(err.value).startswith("model.bn_momentum=") and "a number in (0, 1)" in str(err.value)


def test_bn_momentum_on_a_built_in_model_without_batch_norm_is_refused(compose):
    from harness.config.schema import ConfigError

    with pytest.raises(ConfigError, match=r"^model.bn_momentum=0.9 is not allowed: null unless model.batch_norm"):
        compose("model.bn_momentum=0.9")
    assert dataclasses.asdict(compose("model=mlp", "model.batch_norm=true", "model.bn_momentum=0.9").model)[
        "bn_momentum"] == 0.9


def _kept_against_measured(kept: pd.DataFrame, plain: pd.DataFrame) -> None:
    """precise_bn on: the same training curve as the run without it (training mode normalises with each batch's own
    statistics), and its val_acc what the run without it measured as val_acc_precise_bn (the same 1,024 samples)."""
    same = ["train_loss", "train_acc", "val_acc_precise_bn", "train_eval_acc_precise_bn"]
    pd.testing.assert_frame_equal(kept[same], plain[same], check_exact=True)
    assert kept["val_acc"].tolist() == plain["val_acc_precise_bn"].tolist()
    assert kept["val_loss"].tolist() == pytest.approx(plain["val_loss_precise_bn"].tolist(), rel=1e-5)
    assert (kept["val_acc"] > plain["val_acc"]).all()  # 16 steps an epoch: the moving averages lag


def test_precise_bn_keeps_the_recomputed_statistics_before_every_evaluation(compose, tmp_path, backend, monkeypatch):
    """On each backend: batch 32 for 2 epochs (32 steps, 0.99^32 = 0.72 of the start left in the averages). Kept on
    the columns' own subset, the statistics are recomputed once an epoch, not again for the columns."""
    runs, recomputed = {}, []
    real = precise_bn.PreciseBatchNorm._recompute
    monkeypatch.setattr(precise_bn.PreciseBatchNorm, "_recompute",
                        lambda self, *args: recomputed.append(1) or real(self, *args))
    for name, precise in (("plain", "null"), ("kept", str(precise_bn.SUBSET))):
        recomputed.clear()
        cfg = compose(*TINY, "model.batch_norm=true", "batch_size=32", "lr=0.003", f"precise_bn={precise}",
                      f"backend={backend}")
        run_experiment(cfg, tmp_path / name, run_id="s/0")
        runs[name] = pd.read_parquet(tmp_path / name / "metrics.parquet")
        assert len(recomputed) == 2, name  # once an epoch: for the columns, or kept and read by them
    _kept_against_measured(runs["kept"], runs["plain"])
    assert runs["kept"]["val_acc_precise_bn"].tolist() == runs["kept"]["val_acc"].tolist()
    record = __import__("json").loads((tmp_path / "kept" / "run.json").read_text())
    assert record["recipe"]["precise_bn"] == precise_bn.SUBSET and record["timings"]["precise_bn"] > 0


@pytest.mark.slow  # two simulated devices need a process of their own
@pytest.mark.parametrize("on", ["tensorflow", "jax"])
def test_precise_bn_writes_the_statistics_into_every_replica_under_data_parallelism(tmp_path, on):
    """gpus=2 simulate_devices=true: recomputed on the single-device twin, written back into the replicated
    variables, and the run's val_acc (predicted over both devices) is the run without it's val_acc_precise_bn."""
    from tests.conftest import run_harness

    sweep = tmp_path / "sweep"
    proc = run_harness(*TINY, "model.batch_norm=true", "gpus=2", "simulate_devices=true", "batch_size=32", "lr=0.003",
                       f"backend={on}", "precise_bn=null,1024", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plain, kept = (pd.read_parquet(sweep / job / "metrics.parquet") for job in ("0", "1"))
    assert set(kept["replicas"]) == {2}
    _kept_against_measured(kept, plain)


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "true", "many"])
def test_a_bad_precise_bn_is_one_line_naming_the_key(value, compose):
    from harness.config.schema import ConfigError

    with pytest.raises(ConfigError) as err:
        compose("model.batch_norm=true", f"precise_bn={value}")
    assert str(err.value).startswith("precise_bn=") and "a number of training samples >= 1" in str(err.value)
    with pytest.raises(ConfigError, match=r"^precise_bn=1024 is not allowed: null unless model.batch_norm=true"):
        compose("precise_bn=1024")


def test_precise_bn_on_a_users_model_without_batch_norm_is_noted_once_the_run_knows(compose, tmp_path, monkeypatch):
    (tmp_path / "plainmodels.py").write_text(
        "import keras\n\ndef small(input_shape, num_classes):\n    inputs = keras.Input(shape=input_shape)\n"
        "    x = keras.layers.Dense(8, activation='relu')(keras.layers.Flatten()(inputs))\n"
        "    return keras.Model(inputs, keras.layers.Dense(num_classes, activation='softmax')(x))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = compose(*TINY, "epochs=1", "model=custom", "model._target_=plainmodels.small", "precise_bn=256")
    run_experiment(cfg, tmp_path / "r", run_id="s/0")
    record = __import__("json").loads((tmp_path / "r" / "run.json").read_text())
    assert record["status"] == "completed" and record["notes"] == [
        "precise_bn=256: the model has no batch-norm layers, so nothing is recomputed"]
