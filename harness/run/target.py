"""Steps to a target (target_tune_acc): the tuning slice's accuracy checked between compiled calls of a few steps,
the run stopped the first time it reaches the target, and what the run measures there (target.json).

An epoch is too coarse a clock at small batches (450 steps at batch 8), and evaluating after every call too
costly, so the checks are spaced geometrically: at the end of the first call whose step count is CHECK_SPACING
past the last check's. The crossing then lies between two checks at most about 5% apart (plus one call of at
most batching.TARGET_CHUNK steps or 5% of an epoch); target_resolution records the spacing reached. At the target the run also
measures the gradient noise scale on NOISE_BATCHES fresh small batches, kept as their Gram matrix so that a
study can bootstrap it (harness.probes.noise_scale.from_gram). The time to the target is the wall time from the
fit's start, its first compiled call included, to the end of the check that saw it (of this attempt: a resumed run
counts from its resume), with each check's step and time beside it: what a study that times batch sizes reads.
Beside it, the seconds the harness spent between epochs (its per-epoch measurement passes, the row, the checkpoint,
the trackers: everything from an epoch's end after its check to the next epoch's start), which a user's own
training would not spend: a study takes them out of the time.

With target_check=epoch the target is checked once, at each epoch's end, and every compiled call is a whole epoch:
the shape of a user's run, whose time to the target is what +study=choose predicts and checks. With
target_max_samples a run that has not reached the target once it has trained on that many samples is checked there
and stops (target.json's stopped_short): a study's race or cap, not a run of `epochs` that missed it.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from harness.backend import keras, ops
from harness.config.batching import CHECK_SPACING, BatchPlan, samples_seen
from harness.probes import noise_scale

log = logging.getLogger(__name__)

NOISE_BATCHES = 32    # small batches of noise_scale.SMALL_BATCH for the noise scale at the target
NOISE_SEED = 7919     # with the run's seed: which training samples those batches hold


class TargetMonitor(keras.callbacks.Callback):
    """Stops training the first time the tuning slice's accuracy reaches `target`; `found` then holds what
    target.json records (still None when the budget ran out first). `forward`: inputs -> class probabilities in
    one compiled call (on one device, the run's harness.run.measures.inference). `before`: called before each check
    (the key precise_bn: the batch-norm statistics recomputed and kept), or None."""

    def __init__(self, target: float, tune, plan: BatchPlan, at_target: Callable[[], dict],
                 forward: Callable[[Any], np.ndarray], before: Callable[[], None] | None = None,
                 per_epoch: bool = False, samples: Callable[[int], int] | None = None,
                 max_samples: int | None = None):
        super().__init__()
        self.target, self.plan, self.at_target, self.forward = target, plan, at_target, forward
        # training samples in a number of updates: across every phase of a ramp (harness.config.ramp.RunPlan)
        self.samples = samples or (lambda step: samples_seen(self.plan, step))
        self.begun = False
        self.max_samples, self.stopped_short = max_samples, False
        self.before, self.per_epoch = before, per_epoch
        self.batches = [(ops.as_tensor(x), np.asarray(y)) for x, y in tune]  # tune: (x, y) batches
        self.last_checked = 0
        self.checks = 0
        self.found: dict | None = None
        self.started = time.perf_counter()
        self.check_seconds = 0.0
        # [step, seconds since the fit began, seconds spent between epochs so far] after each check
        self.check_times: list[list[float]] = []
        self.check_tune_acc: list[float] = []  # the tuning slice's accuracy at each check, in check_times' order
        self.between = 0.0       # seconds from each epoch's end (after its check) to the next epoch's start
        self.epoch_ended: float | None = None
        # what starting a fit cost, once for each phase this attempt trained (enter_phase): from the phase's start
        # to the end of its first compiled call, less the seconds of its second (its pipeline, and its train
        # function's trace and compile): what a ramp's switch to this batch pays
        self.fit_start_seconds: list[float] = []
        self._entered: float | None = None
        self._first_end: float | None = None
        self._second_begin: float | None = None

    def enter_phase(self, plan: BatchPlan) -> None:
        """A phase's fit is about to be built (its batches, its train function): its start is timed from here."""
        self.plan, self._entered, self._first_end, self._second_begin = plan, time.perf_counter(), None, None

    def on_train_begin(self, logs=None):
        """The first fit of this attempt starts the clock (a ramp's later phases fit again and keep it)."""
        if self.begun:
            return
        self.begun = True
        self.last_checked = int(self.model.optimizer.iterations.numpy())  # a resumed run checks from where it is
        self.started = time.perf_counter()  # the compile of the first call counts: it is part of the time to target

    def on_epoch_begin(self, epoch, logs=None):
        if self.epoch_ended is not None:
            self.between += time.perf_counter() - self.epoch_ended
            self.epoch_ended = None

    def on_epoch_end(self, epoch, logs=None):
        if self.per_epoch and self.found is None:
            step = int(self.model.optimizer.iterations.numpy())
            self._check(step)
            self._stop_short(step)
        self.epoch_ended = time.perf_counter()  # first of the epoch's end callbacks: the harness's own work follows

    def tune_acc(self) -> float:
        if self.before is not None:
            self.before()
        right = sum(int(np.sum(np.argmax(self.forward(x), axis=1) == y)) for x, y in self.batches)
        return right / sum(len(y) for _, y in self.batches)

    def on_train_batch_begin(self, batch, logs=None):
        if self._first_end is not None and self._second_begin is None:
            self._second_begin = time.perf_counter()

    def _time_start(self) -> None:
        """After a phase's first and second compiled calls: its fit's start cost (fit_start_seconds)."""
        int(self.model.optimizer.iterations.numpy())  # the call done (JAX returns before it is)
        now = time.perf_counter()
        if self._first_end is None:
            self._first_end = now
        elif self._second_begin is not None:
            steady = now - self._second_begin
            self.fit_start_seconds.append(round(max(0.0, self._first_end - self._entered - steady), 4))
            self._entered = None

    def on_train_batch_end(self, batch, logs=None):
        if self._entered is not None:
            self._time_start()
        if self.per_epoch or self.found is not None:
            return
        step = int(self.model.optimizer.iterations.numpy())
        most = self.max_samples is not None and self.samples(step) >= self.max_samples
        if step - self.last_checked >= max(1.0, CHECK_SPACING * step) or (most and step > self.last_checked):
            self._check(step)
        self._stop_short(step)

    def _stop_short(self, step: int) -> None:
        """Stops a run that has trained on target_max_samples without reaching the target (checked at that step)."""
        if self.found is None and self.max_samples is not None and self.samples(step) >= self.max_samples:
            self.stopped_short, self.model.stop_training = True, True
            log.info("the target %.4f not reached in %d samples (target_max_samples %d): stopping at step %d",
                     self.target, self.samples(step), self.max_samples, step)

    def _check(self, step: int) -> None:
        checked = time.perf_counter()
        accuracy = self.tune_acc()
        now = time.perf_counter()
        self.checks, self.check_seconds = self.checks + 1, self.check_seconds + now - checked
        self.check_times.append([step, round(now - self.started, 4), round(self.between, 4)])
        self.check_tune_acc.append(round(accuracy, 6))
        before, self.last_checked = self.last_checked, step
        if accuracy < self.target:
            return
        self.found = {"target_tune_acc": self.target, "steps_to_target": step,
                      "samples_to_target": self.samples(step),
                      "target_resolution": (step - before) / step, "target_checks": self.checks,
                      "seconds_to_target": now - self.started, "between_epochs_seconds": self.between,
                      "check_seconds": self.check_seconds, "check_times": self.check_times,
                      "check_tune_acc": self.check_tune_acc, "target_check": "epoch" if self.per_epoch else "steps",
                      "steps_per_epoch": self.plan.steps_per_epoch, "target_max_samples": self.max_samples,
                      "stopped_short": False, "tune_acc_at_target": accuracy,
                      "fit_start_seconds": self.fit_start_seconds, **self.at_target()}
        self.model.stop_training = True
        log.info("tune_acc %.4f reached the target %.4f at step %d (%d samples; checked %d steps before): stopping",
                 accuracy, self.target, step, self.found["samples_to_target"], step - before)

    def record(self) -> dict:
        """target.json's values: the point found, or the target not reached within the budget."""
        if self.found is not None:
            return self.found
        return {"target_tune_acc": self.target, "steps_to_target": None, "samples_to_target": None,
                "target_resolution": None, "target_checks": self.checks, "seconds_to_target": None,
                "between_epochs_seconds": self.between, "check_seconds": self.check_seconds,
                "check_times": self.check_times, "check_tune_acc": self.check_tune_acc,
                "target_check": "epoch" if self.per_epoch else "steps",
                "steps_per_epoch": self.plan.steps_per_epoch, "target_max_samples": self.max_samples,
                "stopped_short": self.stopped_short, "fit_start_seconds": self.fit_start_seconds}


def measure_at_target(model, val_metrics: Callable[[], dict], x: np.ndarray, y: np.ndarray,
                      decode: Callable | None, seed: int) -> Callable[[], dict]:
    """What the run measures where it reaches the target: validation loss and accuracy, and the gradient noise
    scale from NOISE_BATCHES small batches of training samples (drawn from the run's seed)."""

    def measure() -> dict:
        from harness.data.batches import fixed_batches
        from harness.probes.objective import Objective

        small = min(noise_scale.SMALL_BATCH, len(y) // NOISE_BATCHES)
        chosen = np.random.default_rng([seed, NOISE_SEED]).permutation(len(y))[:NOISE_BATCHES * small]
        objective = Objective(model, fixed_batches(x[chosen], y[chosen], small, decode))
        products = noise_scale.gram(objective.batch_gradients())
        estimate = noise_scale.from_gram(products, small)
        validation = val_metrics()
        return {"val_acc_at_target": validation["val_acc"], "val_loss_at_target": validation["val_loss"],
                "noise_batch": small, "noise_gram": products.tolist(),
                "noise_scale_at_target": None if np.isnan(estimate.noise_scale) else estimate.noise_scale}

    return measure


def monitor(cfg, model, infer, data_in, decode, planned, tune_eval, val_inputs,
            kept=None) -> TargetMonitor | None:
    """The within-epoch check of the run's target_tune_acc, or None without a target (`planned`: the run's
    harness.config.ramp.RunPlan; its phases set the monitor's `plan` in turn)."""
    if cfg.train.target_tune_acc is None:
        return None
    from harness.run.measures import validation_metrics

    at_target = measure_at_target(model, lambda: validation_metrics(infer, val_inputs, data_in.y_val),
                                  data_in.x_train, data_in.y_train, decode, cfg.train.seed)
    forward = infer if planned.first.replicas == 1 else ops.inference(model)  # checked often: one call, no dataset
    return TargetMonitor(cfg.train.target_tune_acc, tune_eval, planned.first, at_target, forward,
                         None if kept is None else kept.keep, per_epoch=cfg.train.target_check == "epoch",
                         samples=planned.samples_seen, max_samples=cfg.train.target_max_samples)


def write(run_dir: Path, monitor: TargetMonitor) -> dict:
    """target.json from the monitor; returns run.json's share of it (steps_to_target, samples_to_target)."""
    from harness.store import target_file

    values = monitor.record()
    target_file.write(run_dir, values)
    return {k: values.get(k) for k in target_file.RUN_FIELDS}
