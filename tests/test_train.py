"""Compile and fit pieces (harness.run.train): sample order, training batches, warm-up, optimizers, the epoch rows."""
import dataclasses

import numpy as np
import pytest

from harness.backend import keras
from harness.config.batching import plan_batches, plan_schedule
from harness.data import pipelines
from harness.run import train


def _order(train_size, shuffle, seed, epoch):
    return pipelines.epoch_order(train_size, shuffle, seed, epoch).numpy().tolist()


def test_epoch_order_is_a_permutation_that_depends_only_on_seed_and_epoch():
    first = _order(100, True, 3, 2)
    assert sorted(first) == list(range(100)) and first != list(range(100))
    pipelines.epoch_order(100, True, 99, 0)  # other draws in between change nothing: the order is stateless
    assert _order(100, True, 3, 2) == first
    assert _order(100, True, 3, 3) != first  # another epoch
    assert _order(100, True, 4, 2) != first  # another seed


def test_epoch_order_without_shuffle_is_the_given_order_every_epoch():
    assert _order(50, False, 3, 0) == list(range(50)) == _order(50, False, 7, 9)


def _batches(dataset):
    return [(x.numpy()[:, 0].tolist(), y.numpy().tolist()) for x, y in dataset]


def _data(n=100):
    x = np.arange(n, dtype=np.float32)[:, None]
    return x, np.arange(n, dtype=np.int64) % 10


def test_training_batches_cover_each_epoch_once_and_never_span_two():
    x, y = _data()
    plan = plan_batches(16, False, 1, len(x))  # 7 steps: six of 16, one of 4
    batches = _batches(pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, True, 0, epochs=3))
    assert [len(b[0]) for b in batches] == [16] * 6 + [4] + [16] * 6 + [4] + [16] * 6 + [4]
    for epoch in range(3):
        seen = [v for xs, _ in batches[7 * epoch: 7 * (epoch + 1)] for v in xs]
        assert sorted(seen) == list(range(100))
        assert seen == _order(100, True, 0, epoch)
    assert all(np.array_equal(np.array(xs, dtype=np.int64) % 10, ys) for xs, ys in batches)  # labels follow


def test_a_step_budget_gives_exactly_that_many_batches_and_a_resumed_run_the_same_ones():
    x, y = _data()
    plan = plan_batches(16, False, 1, len(x))  # 7 steps per epoch
    whole = _batches(pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, True, 5, epochs=2, total_steps=10))
    assert len(whole) == 10 and [len(b[0]) for b in whole[7:]] == [16, 16, 16]  # the last epoch cut short
    resumed = _batches(pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, True, 5, epochs=2, initial_epoch=1, total_steps=10))
    assert resumed == whole[7:]
    unshuffled = _batches(pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, False, 5, epochs=1))
    assert [v for xs, _ in unshuffled for v in xs] == list(range(100))


def test_warmup_rises_linearly_to_the_peak_then_holds(compose):
    plan = plan_batches(8, False, 1, 4000)  # 500 steps per epoch
    config = dataclasses.replace(compose().train, lr=0.001, lr_scaling="linear", base_batch_size=8,
                                 warmup_epochs=2.0)
    schedule = plan_schedule(plan, config)
    assert schedule.warmup_steps == 1000 and schedule.peak_lr == pytest.approx(0.001)
    warmup = train.WarmupSchedule(schedule.peak_lr, schedule.warmup_steps)
    values = [float(warmup(step)) for step in (0, 499, 999, 1000, 5000)]
    assert values == pytest.approx([0.001 / 1000, 0.001 * 500 / 1000, 0.001, 0.001, 0.001])
    assert train.WarmupSchedule.from_config(warmup.get_config()).get_config() == {"peak": 0.001,
                                                                                  "warmup_steps": 1000}


def test_learning_rate_is_a_plain_number_without_warmup():
    assert train.learning_rate(0.01, 0) == 0.01
    schedule = train.learning_rate(0.01, 20)
    assert isinstance(schedule, train.WarmupSchedule) and (schedule.peak, schedule.warmup_steps) == (0.01, 20)


def _tiny_model(inputs=4, classes=3):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((inputs,)), keras.layers.Dense(classes, activation="softmax")])


@pytest.mark.parametrize("name,cls,momentum", [("adam", "Adam", None), ("sgd", "SGD", 0.0),
                                               ("momentum", "SGD", 0.9), ("rmsprop", "RMSprop", None)])
def test_each_optimizer_name_compiles_its_keras_optimizer(name, cls, momentum):
    model = _tiny_model()
    train.compile_model(model, name, 0.05, steps_per_execution=4)
    assert type(model.optimizer).__name__ == cls
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(0.05)
    if momentum is not None:
        assert model.optimizer.momentum == momentum
    assert model.steps_per_execution == 4


def _record(x, y, x_val, y_val, epochs, **recorder_options):
    """Fit a tiny model through train.fit with an EpochRecorder; returns (rows handed on, recorder)."""
    model = _tiny_model(x.shape[1], 3)
    train.compile_model(model, "sgd", 0.1)
    plan = plan_batches(10, False, 1, len(x))
    handed = []
    recorder = train.EpochRecorder(
        pipelines.evaluation_dataset(x, y), pipelines.evaluation_dataset(x_val, y_val).map(lambda a, b: a), y_val,
        len(x), plan.global_batch_size, {"run_id": "s/0", "batch_size": 10}, handed.append, **recorder_options)
    train.fit(model, pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, True, 0, epochs), plan, epochs, [recorder])
    return handed, recorder, model


def _three_classes(n, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(n, dtype=np.int64) % 3
    x = (rng.normal(size=(n, 4)) + 2.0 * np.eye(4)[y]).astype(np.float32)
    return x, y


def test_every_epoch_becomes_one_row_with_validation_and_per_class_recall():
    x, y = _three_classes(60, 0)
    x_val, y_val = _three_classes(30, 1)
    rows, recorder, model = _record(x, y, x_val, y_val, epochs=2)
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
    assert not recorder.diverged and recorder.target_reached_at is None


def test_a_nan_loss_stops_training_as_diverged():
    x, y = _three_classes(60, 0)
    x[0, 0] = np.nan
    rows, recorder, _ = _record(x, y, *_three_classes(30, 1), epochs=3)
    assert recorder.diverged and len(rows) == 1


def test_reaching_the_target_training_loss_stops_training():
    x, y = _three_classes(60, 0)
    rows, recorder, _ = _record(x, y, *_three_classes(30, 1), epochs=3, target_train_loss=100.0)
    assert recorder.target_reached_at == 1 and len(rows) == 1 and not recorder.diverged
