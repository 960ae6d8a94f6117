"""The training recipe on both backends (harness.run.train): Keras's optimizers lower the loss, decoupled weight
decay moves the weights by lr x wd and spares biases, label smoothing changes the training loss only, and the
schedules' learning rates are the plan's."""
import dataclasses

import numpy as np
import pytest

from harness.backend import keras
from harness.config.batching import plan_batches, plan_schedule
from harness.config.recipe import OPTIMIZERS
from harness.config.rules import ADAM_DEFAULTS, ADAM_FAMILY
from harness.run import measures, train
from harness.run.learning_rate import learning_rate
from tests.helpers import backends


def _data(n=96, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = (rng.normal(size=(n, 4)) + 2.0 * np.eye(4)[y]).astype(np.float32)
    return x, y


def _model(hidden=8, classes=3):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(hidden, activation="relu"),
                             keras.layers.Dense(classes, activation="softmax")])


def _recipe(compose_train, **fields):
    return dataclasses.replace(compose_train, **fields)


@pytest.fixture(scope="module")
def default_train():
    from tests.conftest import compose_config

    return compose_config().train


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_each_optimizer_trains_and_lowers_the_loss(backend, default_train, name):
    if not backends.here(backend):
        return
    x, y = _data()
    model = _model()
    train.compile_model(model, train.make_optimizer(_recipe(default_train, optimizer=name), 0.01, model))
    before = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    model.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False)
    after = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert np.isfinite(after) and after < before, (name, before, after)


@pytest.mark.parametrize("name", ["sgd", "adamw", "lion"])
def test_weight_decay_moves_the_weights_by_lr_times_wd_and_spares_biases(backend, default_train, name):
    """One step with and without decay from the same weights and batch: Keras decays before the update (decoupled:
    w <- w - lr wd w, then the gradient step, whose gradient is the same), so kernels differ by lr x wd x w; the
    biases, like every 1-D weight, are not decayed."""
    if not backends.here(backend):
        return
    x, y = _data(16)
    steps = {}
    for decay in (0.0, 0.5):
        model = _model()
        start = [np.array(w) for w in model.get_weights()]
        recipe = _recipe(default_train, optimizer=name, weight_decay=decay)
        train.compile_model(model, train.make_optimizer(recipe, 0.1, model))
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
        steps[decay] = [np.array(w) for w in model.get_weights()]
    kernel, bias = 0, 1
    assert np.allclose(steps[0.0][kernel] - steps[0.5][kernel], 0.1 * 0.5 * start[kernel], atol=1e-6)
    assert np.allclose(steps[0.0][bias], steps[0.5][bias], atol=1e-7)  # spared
    assert not np.allclose(steps[0.5][kernel], steps[0.0][kernel])


def test_adamw_and_muon_keep_their_own_decay_unless_one_is_given(default_train):
    model = _model()
    assert train.make_optimizer(_recipe(default_train, optimizer="adamw"), 0.01, model).weight_decay == 0.004
    muon = train.make_optimizer(_recipe(default_train, optimizer="muon", weight_decay=0.1), 0.01, model)
    assert muon.weight_decay == 0.1 and muon.adam_weight_decay == 0.1
    # the hidden kernel takes Muon's step; the output layer goes to its AdamW, as its docs say, and every 1-D weight
    assert [muon._should_use_adamw(w) for w in model.trainable_weights] == [False, True, True, True]
    assert train.make_optimizer(_recipe(default_train, optimizer="adam"), 0.01, model).weight_decay is None


@pytest.mark.parametrize("name, beta_2, epsilon", [
    ("adam", ("beta_2", 0.95), ("epsilon", 1e-6)), ("lamb", ("beta_2", 0.95), ("epsilon", 1e-6)),
    ("muon", ("adam_beta_2", 0.95), ("epsilon", 1e-6)), ("rmsprop", ("rho", 0.95), ("epsilon", 1e-6)),
    ("lion", ("beta_2", 0.95), None)])
def test_beta_2_and_epsilon_reach_keras_s_optimizer(backend, default_train, name, beta_2, epsilon):
    """beta_2 and epsilon under each class's own keyword (Muon's AdamW: adam_beta_2; RMSprop: rho), on both
    backends; null keeps the class's own (Adam's beta_2 0.999, epsilon 1e-7)."""
    if not backends.here(backend):
        return
    given = {"beta_2": beta_2[1], **({"epsilon": epsilon[1]} if epsilon else {})}
    optimizer = train.make_optimizer(_recipe(default_train, optimizer=name, **given), 0.01, _model())
    assert getattr(optimizer, beta_2[0]) == pytest.approx(beta_2[1])
    if epsilon:
        assert getattr(optimizer, epsilon[0]) == pytest.approx(epsilon[1])
    own = train.make_optimizer(_recipe(default_train, optimizer="adam"), 0.01, _model())
    assert (own.beta_2, own.epsilon) == (0.999, 1e-7)


@pytest.mark.parametrize("name", ADAM_FAMILY)
def test_the_adam_family_s_defaults_the_adam_sde_rule_scales_are_keras_s_own(default_train, name):
    """+study=recover's adam_sde rule scales beta_1, beta_2 and epsilon from ADAM_DEFAULTS where the command leaves
    them null: a Keras that changed a class's own would make the rule start from the wrong values."""
    optimizer = train.make_optimizer(_recipe(default_train, optimizer=name), 0.01, _model())
    assert {key: getattr(optimizer, key) for key in ADAM_DEFAULTS} == pytest.approx(ADAM_DEFAULTS)


def test_nesterov_reaches_sgd(default_train):
    recipe = _recipe(default_train, optimizer="momentum", nesterov=True, momentum=0.8)
    optimizer = train.make_optimizer(recipe, 0.01, _model())
    assert optimizer.nesterov and optimizer.momentum == 0.8


def test_label_smoothing_0_is_todays_loss_and_0_1_raises_the_training_loss_only(backend):
    """The smoothed loss at 0 equals Keras's sparse cross-entropy to 1e-6; at 0.1 the loss the model trains on is
    higher, while what the harness reports after the epoch (Evaluation's train_eval_loss) is the plain
    cross-entropy of the same predictions."""
    if not backends.here(backend):
        return
    x, y = _data()
    probabilities = keras.ops.convert_to_tensor(np.full((len(y), 3), 1 / 3, np.float32) + np.eye(3)[y] * 0.2)
    plain = keras.ops.convert_to_numpy(keras.losses.sparse_categorical_crossentropy(y, probabilities))
    none = keras.ops.convert_to_numpy(train.SmoothedSparseCrossentropy(0.0, 3).call(y, probabilities))
    assert np.allclose(none, plain, atol=1e-6)
    model = _model()
    train.compile_model(model, keras.optimizers.Adam(0.01), label_smoothing=0.1, num_classes=3)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    measured = model.evaluate(x, y, verbose=0, return_dict=True)
    row = measures.Evaluation(measures.inference(model), train.ArrayDataset([(x, y)]))(epoch=2, step=12)
    expected, _ = measures.classification_metrics(model.predict(x, verbose=0), y)
    assert row["train_eval_loss"] == pytest.approx(expected, rel=1e-4)  # unsmoothed
    assert measured["loss"] > row["train_eval_loss"]  # the smoothed training objective is higher


@pytest.mark.parametrize("shape", ["cosine", "linear", "step"])
def test_the_schedule_on_each_backend_is_the_plans(backend, default_train, shape):
    if not backends.here(backend):
        return
    recipe = _recipe(default_train, lr=0.01, lr_schedule=shape, warmup_epochs=1.0, epochs=4)
    schedule = plan_schedule(plan_batches(8, False, 1, 400), recipe)  # 50 steps an epoch, 200 planned
    keras_schedule = learning_rate(schedule)
    for step in (0, 49, 50, 99, 100, 149, 150, 199):
        assert float(keras.ops.convert_to_numpy(keras_schedule(step))) == pytest.approx(schedule.lr_at(step),
                                                                                       rel=1e-5, abs=1e-9)
    if shape != "step":
        assert schedule.lr_at(199) == 0.0
