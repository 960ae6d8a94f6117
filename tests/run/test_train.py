"""Compile and fit (harness.run.train): warm-up, optimizers, the epoch rows and their measures, divergence and
target stops."""
import dataclasses

import numpy as np
import pytest

from harness.backend import keras, tf
from harness.config.batching import plan_batches, plan_schedule
from harness.data import pipelines
from harness.run import measures as run_measures
from harness.run import train
from harness.run.learning_rate import RecipeSchedule, learning_rate


def _data(n=100):
    x = np.arange(n, dtype=np.float32)[:, None]
    return x, np.arange(n, dtype=np.int64) % 10






def test_warmup_rises_linearly_to_the_peak_then_holds(compose):
    plan = plan_batches(8, False, 1, 4000)  # 500 steps per epoch
    config = dataclasses.replace(compose().train, lr=0.001, lr_scaling="linear", base_batch_size=8,
                                 warmup_epochs=2.0)
    schedule = plan_schedule(plan, config)
    assert schedule.warmup_steps == 1000 and schedule.peak_lr == pytest.approx(0.001)
    warmup = learning_rate(schedule)
    values = [float(warmup(step)) for step in (0, 499, 999, 1000, 5000)]
    assert values == pytest.approx([0.001 / 1000, 0.001 * 500 / 1000, 0.001, 0.001, 0.001])
    assert RecipeSchedule.from_config(warmup.get_config()).get_config() == {
        "peak": 0.001, "warmup_steps": 1000, "shape": "constant", "planned_steps": 15 * 500}


def test_learning_rate_is_a_plain_number_without_warmup_or_decay(compose):
    plan = plan_batches(8, False, 1, 4000)
    assert learning_rate(plan_schedule(plan, compose().train)) == 0.001  # every run before the schedules
    cosine = learning_rate(plan_schedule(plan, dataclasses.replace(compose().train, lr_schedule="cosine")))
    assert isinstance(cosine, RecipeSchedule) and cosine.shape == "cosine"


def _shape(compose, shape, warmup_epochs=0.0, epochs=4):
    """The real schedule of batch 8 on 400 samples (50 steps an epoch, `epochs` epochs) and its Keras schedule."""
    config = dataclasses.replace(compose().train, lr=0.01, lr_schedule=shape, warmup_epochs=warmup_epochs,
                                 epochs=epochs)
    schedule = plan_schedule(plan_batches(8, False, 1, 400), config)
    return schedule, learning_rate(schedule)


@pytest.mark.parametrize("shape", ["constant", "cosine", "linear", "step"])
def test_every_shape_warms_up_exactly_as_the_constant_schedule_and_keras_agrees_with_the_plan(compose, shape):
    schedule, keras_schedule = _shape(compose, shape, warmup_epochs=1.0)
    _, constant = _shape(compose, "constant", warmup_epochs=1.0)
    warm = [float(constant(step)) for step in range(50)]
    assert [float(keras_schedule(step)) for step in range(50)] == pytest.approx(warm, rel=1e-6)
    assert warm[0] == pytest.approx(0.01 / 50) and warm[-1] == pytest.approx(0.01)
    steps = range(schedule.planned_steps)
    assert [float(keras_schedule(s)) for s in steps] == pytest.approx([schedule.lr_at(s) for s in steps],
                                                                      rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("shape", ["cosine", "linear"])
def test_cosine_and_linear_decay_to_0_at_the_runs_last_step(compose, shape):
    schedule, keras_schedule = _shape(compose, shape, warmup_epochs=1.0)
    last = schedule.planned_steps - 1
    assert schedule.planned_steps == 200 and float(keras_schedule(last)) == pytest.approx(0.0, abs=1e-9)
    assert float(keras_schedule(50)) == pytest.approx(0.01)  # the first step after the warm-up: the peak
    middle = 50 + (last - 50) / 2
    assert schedule.lr_at(middle) == pytest.approx(0.005)  # half way down, for both shapes


def test_step_falls_tenfold_at_half_and_three_quarters_of_the_steps(compose):
    schedule, keras_schedule = _shape(compose, "step")
    assert schedule.step_boundaries == (100, 150)
    rates = {step: float(keras_schedule(step)) for step in (0, 99, 100, 149, 150, 199)}
    assert rates == pytest.approx({0: 0.01, 99: 0.01, 100: 0.001, 149: 0.001, 150: 0.0001, 199: 0.0001})


def _tiny_model(inputs=4, classes=3):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((inputs,)), keras.layers.Dense(classes, activation="softmax")])


@pytest.mark.parametrize("name,cls,keyword,default", [
    ("adam", "Adam", "beta_1", 0.9), ("adamw", "AdamW", "beta_1", 0.9), ("lamb", "Lamb", "beta_1", 0.9),
    ("lion", "Lion", "beta_1", 0.9), ("muon", "Muon", "momentum", 0.95), ("nadam", "Nadam", "beta_1", 0.9),
    ("sgd", "SGD", "momentum", 0.0), ("momentum", "SGD", "momentum", 0.9), ("rmsprop", "RMSprop", "momentum", 0.0)])
def test_each_optimizer_name_builds_its_keras_class_with_momentum_where_the_table_says(compose, name, cls, keyword,
                                                                                       default):
    model = _tiny_model()
    recipe = dataclasses.replace(compose().train, optimizer=name)
    optimizer = train.make_optimizer(recipe, 0.05, model)
    assert type(optimizer).__name__ == cls and getattr(optimizer, keyword) == default  # null: the class's own
    moved = train.make_optimizer(dataclasses.replace(recipe, momentum=0.5), 0.05, _tiny_model())
    assert getattr(moved, keyword) == 0.5
    train.compile_model(model, optimizer, steps_per_execution=4)
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(0.05) and model.steps_per_execution == 4


def _record(x, y, x_val, y_val, epochs, target_train_loss=None, measures=()):
    """Fit a tiny model through train.fit with an EpochRecorder (evaluation and validation, then `measures`) and the
    stops; returns (rows handed on, recorder, model, the divergence stop, the target-loss stop)."""
    model = _tiny_model(x.shape[1], 3)
    train.compile_model(model, keras.optimizers.SGD(0.1))
    plan = plan_batches(10, False, 1, len(x))
    handed = []
    infer = run_measures.inference(model)
    measured = [run_measures.Evaluation(infer, pipelines.evaluation_dataset(x, y)),
                run_measures.Validation(infer, pipelines.evaluation_dataset(x_val, y_val).map(lambda a, b: a), y_val),
                *measures]
    recorder = train.EpochRecorder({"run_id": "s/0", "batch_size": 10}, handed.append, measured, len(x),
                                   plan.global_batch_size)
    divergence = train.StopOnDivergence(recorder.rows)
    at_loss = train.StopAtTrainLoss(target_train_loss, recorder.rows) if target_train_loss is not None else None
    batches = pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, True, 0, epochs)
    train.fit(model, batches, plan, epochs, [c for c in (recorder, divergence, at_loss) if c is not None])
    return handed, recorder, model, divergence, at_loss


def test_the_training_step_is_traced_once_and_trains_to_the_weights_of_keras_alone():
    """Without a distribution strategy Keras creates the optimizer's and metrics' variables in the first trace of its
    training step and tf.function traces it again (MobileNetV2: 7 s of CPU each time); train.fit builds them first,
    so the step is traced once, and two epochs with Adam's slots end at Keras's own weights."""
    x, y = _three_classes(60, 0)
    plan = plan_batches(10, False, 1, len(x))
    traces, weights = {}, {}
    for fit in ("harness", "keras"):
        keras.utils.set_random_seed(0)
        model = _tiny_model(x.shape[1], 3)
        train.compile_model(model, keras.optimizers.Adam(0.01), plan.steps_per_execution)
        traced, step = [], model.train_step
        model.train_step = lambda data, step=step, traced=traced: (traced.append(data), step(data))[1]
        batches = pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, True, 0, 2)
        if fit == "harness":
            train.fit(model, batches, plan, 2, [])
        else:
            model.fit(batches, epochs=2, steps_per_epoch=plan.steps_per_epoch, verbose=0, shuffle=False)
        traces[fit] = len(traced)
        weights[fit] = model.get_weights() + [v.numpy() for v in model.optimizer.variables]
    assert traces == {"harness": 1, "keras": 2}
    assert len(weights["harness"]) == len(weights["keras"]) == 2 + 6  # kernel, bias; step, lr, 2 x (m, v)
    for ours, theirs in zip(weights["harness"], weights["keras"]):
        np.testing.assert_array_equal(ours, theirs)


def _three_classes(n, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(n, dtype=np.int64) % 3
    x = (rng.normal(size=(n, 4)) + 2.0 * np.eye(4)[y]).astype(np.float32)
    return x, y


def test_every_epoch_becomes_one_row_with_validation_and_per_class_recall():
    x, y = _three_classes(60, 0)
    x_val, y_val = _three_classes(30, 1)
    rows, recorder, model, divergence, _ = _record(x, y, x_val, y_val, epochs=2)
    assert rows == recorder.rows and [r["epoch"] for r in rows] == [1, 2] and [r["step"] for r in rows] == [6, 12]
    assert list(rows[0]) == ["run_id", "batch_size", "epoch", "step", "train_loss", "train_acc", "train_eval_loss",
                             "train_eval_acc", "val_loss", "val_acc", "val_recall_0", "val_recall_1",
                             "val_recall_2", "lr", "epoch_seconds", "samples_per_second"]
    last = rows[-1]
    predicted = model.predict(x_val, verbose=0).argmax(axis=1)  # the model as it is after the last epoch
    assert last["val_acc"] == pytest.approx(np.mean(predicted == y_val))
    for k in range(3):
        assert last[f"val_recall_{k}"] == pytest.approx(np.mean(predicted[y_val == k] == k))
    evaluated = model.evaluate(x_val, y_val, verbose=0, return_dict=True)
    assert last["val_loss"] == pytest.approx(evaluated["loss"], rel=1e-4)
    assert last["lr"] == pytest.approx(0.1) and last["samples_per_second"] > 0
    assert not divergence.diverged


def test_evaluation_and_validation_share_one_compiled_function_and_give_keras_numbers():
    """Every inference-mode pass after an epoch goes through the run's one compiled function (measures.inference),
    where Keras's evaluate and predict traced a function each (MobileNetV2: 2.8 s of CPU): neither is built, the
    function is traced at most twice for three batch shapes, and the training data read batch by batch (8 batches of
    7, then 4) gives Keras's own loss and accuracy."""
    x, y = _three_classes(60, 0)
    x_val, y_val = _three_classes(30, 1)
    model = _tiny_model(x.shape[1], 3)
    train.compile_model(model, keras.optimizers.SGD(0.1))
    model.fit(x, y, batch_size=10, epochs=2, verbose=0, shuffle=False)
    infer = run_measures.inference(model)
    val_inputs = pipelines.evaluation_dataset(x_val, y_val).map(lambda a, b: a)
    row = {**run_measures.Evaluation(infer, tf.data.Dataset.from_tensor_slices((x, y)).batch(7))(2, 12),
           **run_measures.Validation(infer, val_inputs, y_val)(2, 12)}
    assert model.test_function is None and model.predict_function is None
    assert infer.compiled.experimental_get_tracing_count() <= 2
    evaluated = model.evaluate(x, y, verbose=0, return_dict=True)
    assert row["train_eval_loss"] == pytest.approx(evaluated["loss"], rel=1e-5)
    assert row["train_eval_acc"] == pytest.approx(evaluated["accuracy"])
    assert row["val_acc"] == pytest.approx(model.evaluate(x_val, y_val, verbose=0, return_dict=True)["accuracy"])


def test_a_nan_loss_stops_training_as_diverged():
    x, y = _three_classes(60, 0)
    x[0, 0] = np.nan
    rows, _, _, divergence, _ = _record(x, y, *_three_classes(30, 1), epochs=3)
    assert divergence.diverged and len(rows) == 1


def test_reaching_the_target_training_loss_stops_training():
    x, y = _three_classes(60, 0)
    rows, _, _, divergence, at_loss = _record(x, y, *_three_classes(30, 1), epochs=3, target_train_loss=100.0)
    assert at_loss.reached_at == 1 and len(rows) == 1 and not divergence.diverged


class _Counted:
    """A measure that records when it was asked."""

    def __init__(self, needs_finite_loss):
        self.needs_finite_loss, self.asked = needs_finite_loss, []

    def __call__(self, epoch, step):
        self.asked.append((epoch, step))
        return {f"asked_{'finite' if self.needs_finite_loss else 'always'}": float(epoch)}


def test_each_measure_adds_its_columns_and_one_that_needs_a_finite_loss_is_skipped_after_a_nan():
    """A measure's columns follow the validation's, those that need a finite loss come after the epoch's speed;
    after a NaN loss (the run stops, diverged) only the others are asked."""
    x, y = _three_classes(60, 0)
    always, finite = _Counted(False), _Counted(True)
    rows, *_ = _record(x, y, *_three_classes(30, 1), epochs=2, measures=[finite, always])
    assert always.asked == finite.asked == [(1, 6), (2, 12)]
    assert list(rows[0])[-5:] == ["asked_always", "lr", "epoch_seconds", "samples_per_second", "asked_finite"]
    x[0, 0] = np.nan
    always, finite = _Counted(False), _Counted(True)
    rows, *_ = _record(x, y, *_three_classes(30, 1), epochs=2, measures=[finite, always])
    assert always.asked == [(1, 6)] and finite.asked == [] and "asked_finite" not in rows[0]
