"""The within-epoch target (harness.run.target): a run stops at the first check whose tuning accuracy reaches
target_tune_acc, counts its steps and samples, checks geometrically, and records a miss as null."""
import numpy as np
import pytest

from harness.backend import keras
from harness.config.batching import plan_batches, samples_seen
from harness.data import pipelines
from harness.run import measures, target, train


def _three_classes(n, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(n, dtype=np.int64) % 3
    x = (rng.normal(size=(n, 4)) + 1.5 * np.eye(4)[y]).astype(np.float32)
    return x, y


def _fit_to(goal: float, epochs: int = 6, tune_labels=None, per_epoch: bool = False, after=(), max_samples=None,
            before=(), enter: bool = True):
    """A softmax regression on 3 classes, batch 4 (25 steps an epoch, calls of 5; with `per_epoch`, checked at each
    epoch's end with a whole epoch a call), checked against `goal`, its one phase entered as a run enters it
    (`enter`); `before` and `after`: callbacks before and after the monitor."""
    x, y = _three_classes(100, 0)
    x_tune, y_tune = _three_classes(60, 1)
    if tune_labels is not None:
        y_tune = tune_labels
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    plan = plan_batches(4, False, 1, len(x), check_target=not per_epoch)
    train.compile_model(model, keras.optimizers.SGD(0.3), plan.steps_per_execution)
    seen = []

    def at_target():
        seen.append(int(model.optimizer.iterations.numpy()))
        return {"val_acc_at_target": 0.5, "val_loss_at_target": 1.0}

    monitor = target.TargetMonitor(goal, pipelines.evaluation_dataset(x_tune, y_tune), plan, at_target,
                                   measures.inference(model), per_epoch=per_epoch, max_samples=max_samples)
    if enter:
        monitor.enter_phase(plan)
    batches = pipelines.training_dataset(x, y, plan.global_batch_size, plan.steps_per_epoch, True, 0, epochs)
    train.fit(model, batches, plan, epochs, [*before, monitor, *after])
    return monitor, model, plan, seen, (x_tune, y_tune)


def test_the_run_stops_within_its_epoch_at_the_first_check_that_reaches_the_target():
    monitor, model, plan, seen, (x_tune, y_tune) = _fit_to(0.75)
    found = monitor.record()
    steps = found["steps_to_target"]
    assert plan.steps_per_execution == 5 and steps % 5 == 0
    assert steps < 6 * plan.steps_per_epoch and int(model.optimizer.iterations.numpy()) == steps == seen[0]
    assert found["samples_to_target"] == samples_seen(plan, steps)
    accuracy = float(np.mean(np.argmax(model.predict(x_tune, verbose=0), axis=1) == y_tune))
    assert found["tune_acc_at_target"] == pytest.approx(accuracy) and accuracy >= 0.75
    assert 0 < found["target_resolution"] <= 1 and found["val_acc_at_target"] == 0.5
    # the accuracy at every check beside its step: below the target until the last, which is the one that saw it
    curve = found["check_tune_acc"]
    assert len(curve) == len(found["check_times"]) == found["target_checks"]
    assert all(a < 0.75 for a in curve[:-1]) and curve[-1] == pytest.approx(found["tune_acc_at_target"], abs=1e-6)


def test_checks_are_spaced_geometrically_not_at_every_call():
    monitor, _, plan, _, _ = _fit_to(0.99, epochs=8, tune_labels=np.zeros(60, dtype=np.int64) + 2 * (
        np.arange(60) % 2))  # half the slice labelled 0, half 2: never 0.99
    found = monitor.record()
    calls = 8 * plan.steps_per_epoch // plan.steps_per_execution
    assert found["steps_to_target"] is None and found["samples_to_target"] is None
    # every call until the step count passes 1 / CHECK_SPACING calls' worth, then 5% of the count apart
    assert 10 <= found["target_checks"] < calls


def test_the_time_to_target_runs_from_the_fit_s_start_to_the_check_that_saw_it(monkeypatch):
    """A clock that ticks one second at each reading: the fit starts at a reading, each check reads it twice
    (before and after), so the target's time is two seconds a check, one of them the check's own; the checks'
    times are the clock after each, ending at the target's (no phase entered: its fit's start reads no clock)."""
    clock = iter(range(1, 10_000))
    monkeypatch.setattr(target.time, "perf_counter", lambda: float(next(clock)))
    monitor, _, _, _, _ = _fit_to(0.75, enter=False)
    found = monitor.record()
    checks = found["target_checks"]
    assert found["seconds_to_target"] == 2 * checks and found["check_seconds"] == checks
    assert found["check_times"][-1] == [found["steps_to_target"], 2 * checks, 0]  # in the first epoch
    assert [t for _, t, _ in found["check_times"]] == [2 * k for k in range(1, checks + 1)]


def test_a_run_that_misses_has_no_time_to_target_but_its_checks_times():
    monitor, _, _, _, _ = _fit_to(0.99, epochs=2, tune_labels=np.zeros(60, dtype=np.int64) + 2 * (
        np.arange(60) % 2))
    found = monitor.record()
    assert found["seconds_to_target"] is None and len(found["check_times"]) == found["target_checks"]
    assert found["check_seconds"] > 0


_NEVER = np.zeros(60, dtype=np.int64) + 2 * (np.arange(60) % 2)  # half the slice labelled 0, half 2: never 0.99


def test_with_target_check_epoch_the_target_is_checked_once_an_epoch_a_whole_epoch_a_call():
    """A user's run's shape: one compiled call an epoch and the target checked at its end, never within it."""
    monitor, model, plan, seen, _ = _fit_to(0.75, per_epoch=True)
    found = monitor.record()
    assert plan.steps_per_execution == plan.steps_per_epoch == 25 and found["target_check"] == "epoch"
    assert found["steps_to_target"] % 25 == 0 and [s for s, *_ in found["check_times"]] == list(
        range(25, found["steps_to_target"] + 1, 25))
    missed, _, _, _, _ = _fit_to(0.99, epochs=3, tune_labels=_NEVER, per_epoch=True)
    assert missed.record()["target_checks"] == 3 and missed.record()["steps_per_epoch"] == 25


def test_a_run_stops_short_at_target_max_samples_checked_there_and_says_so():
    """A study's race or cap: a run that has not reached the target once it has trained on target_max_samples is
    checked at that call and stops, stopped_short (not a run of its epochs that missed); one that reaches the target
    first is not stopped short."""
    monitor, model, plan, _, _ = _fit_to(0.99, epochs=6, tune_labels=_NEVER, max_samples=230)
    found = monitor.record()
    assert found["stopped_short"] is True and found["steps_to_target"] is None
    stopped = int(model.optimizer.iterations.numpy())  # the first call's end at or past 230 samples: step 60
    assert stopped == 60 < 6 * plan.steps_per_epoch and found["check_times"][-1][0] == stopped
    assert found["target_max_samples"] == 230
    per_epoch, model, _, _, _ = _fit_to(0.99, epochs=6, tune_labels=_NEVER, per_epoch=True, max_samples=230)
    assert per_epoch.record()["stopped_short"] and int(model.optimizer.iterations.numpy()) == 75  # epoch 3's end
    reached, _, _, _, _ = _fit_to(0.75, max_samples=10_000)
    assert reached.record()["stopped_short"] is False and reached.record()["steps_to_target"] is not None
    unlimited, model, _, _, _ = _fit_to(0.99, epochs=3, tune_labels=_NEVER)
    assert unlimited.record()["stopped_short"] is False and int(model.optimizer.iterations.numpy()) == 75


def test_the_seconds_between_epochs_are_counted_apart_from_the_time_to_the_target(monkeypatch):
    """A clock that ticks one second at each reading, and a callback after the monitor that reads it ten times at
    each epoch's end (the harness's measurements, row and checkpoint): each gap between two epochs counts 11
    seconds (those ten and the next epoch's start), recorded beside every check and in all."""
    clock = iter(range(1, 10_000))
    monkeypatch.setattr(target.time, "perf_counter", lambda: float(next(clock)))

    class Measures(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            for _ in range(10):
                target.time.perf_counter()

    monitor, _, _, _, _ = _fit_to(0.99, epochs=3, tune_labels=_NEVER, per_epoch=True, after=[Measures()])
    found = monitor.record()
    assert [between for _, _, between in found["check_times"]] == [0, 11, 22]
    assert found["between_epochs_seconds"] == 22  # after the last epoch no training follows: nothing to take out


def test_a_fit_s_start_is_its_first_call_less_its_second_what_a_switch_to_its_batch_pays(monkeypatch):
    """fit_start_seconds: from the phase's start to the end of its first compiled call, less the seconds of its
    second. A clock moved by the calls alone: the first 10 s of compile and 1 s of work, each later one 1 s (the
    checks between them take none)."""
    clock = {"now": 0.0, "calls": 0}
    monkeypatch.setattr(target.time, "perf_counter", lambda: clock["now"])

    class Calls(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            clock["now"] += 11.0 if clock["calls"] == 0 else 1.0
            clock["calls"] += 1

    monitor, *_ = _fit_to(0.99, epochs=1, tune_labels=_NEVER, before=[Calls()])
    assert monitor.record()["fit_start_seconds"] == [10.0]
    monitor, *_ = _fit_to(0.99, epochs=1, tune_labels=_NEVER, enter=False)
    assert monitor.record()["fit_start_seconds"] == []  # a fit no phase started: nothing timed
