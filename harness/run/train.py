"""Compile and fit, with one callback that turns every epoch into a tidy metrics row."""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable

import numpy as np

from harness.backend import keras
from harness.config.batching import BatchPlan
from harness.config.schema import OPTIMIZERS

log = logging.getLogger(__name__)

class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak` over `warmup_steps` updates, then constant (Goyal et al. 2017)."""

    def __init__(self, peak: float, warmup_steps: int):
        self.peak, self.warmup_steps = float(peak), int(warmup_steps)

    def __call__(self, step):
        progress = (keras.ops.cast(step, "float32") + 1.0) / float(self.warmup_steps)
        return self.peak * keras.ops.minimum(1.0, progress)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


def learning_rate(peak_lr: float, warmup_steps: int):
    """A float, or a warm-up schedule when there is warm-up."""
    return WarmupSchedule(peak_lr, warmup_steps) if warmup_steps > 0 else peak_lr


def compile_model(model: keras.Model, optimizer: str, lr, steps_per_execution: int = 1) -> None:
    """Compile for integer class labels; call inside the strategy's scope.

    On TensorFlow several steps per compiled call (a tf.while_loop inside one tf.function) remove Keras's per-step
    Python overhead, which dominates small-batch training of small models; the arithmetic is the same. On JAX
    Keras runs them as consecutive jitted steps, and callbacks between calls see the state of the last.
    """
    class_name, options = OPTIMIZERS[optimizer]
    model.compile(
        optimizer=getattr(keras.optimizers, class_name)(lr, **options),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )


class StepSync(keras.callbacks.Callback):
    """Waits for each step to finish before Keras dispatches the next (JAX's simulated host devices: with steps in
    flight, XLA:CPU deadlocked their all-reduce; harness.config.batching)."""

    def on_train_batch_end(self, batch, logs=None):
        self.model.optimizer.iterations.numpy()  # the step's last write: ready once the step is done


class ArrayDataset(keras.utils.PyDataset):
    """harness.data.batches.Batches as Keras reads them (evaluate, predict) on a backend without tf.data."""

    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, i: int):
        return self.batches[i]

    def __iter__(self):
        return iter(self.batches)


class EpochRecorder(keras.callbacks.Callback):
    """After each epoch: validate, measure train accuracy in inference mode, build one row, hand it to `on_row`.

    Stops training when the loss is NaN or infinite and remembers it (`diverged`).
    """

    def __init__(self, train_eval, val_inputs, val_labels: np.ndarray,
                 train_size: int, global_batch_size: int, columns: dict[str, Any],
                 on_row: Callable[[dict[str, Any]], None],
                 rows: list[dict[str, Any]] | None = None, target_train_loss: float | None = None,
                 extra_columns: Callable[[int], dict[str, Any]] | None = None,
                 tune_eval=None, precise_bn=None):
        super().__init__()
        self.precise_bn = precise_bn  # harness.run.precise_bn.PreciseBatchNorm for a model with batch norm, else None
        self.tune_eval = tune_eval  # the held-out tuning slice (tune_fraction > 0): tune_loss and tune_acc
        self.train_eval, self.train_size, self.columns, self.on_row = train_eval, train_size, columns, on_row
        self.global_batch_size = global_batch_size
        self.val_inputs, self.val_labels, self.target_train_loss = val_inputs, val_labels, target_train_loss
        self.extra_columns = extra_columns  # more columns measured after the epoch (harness.probes.in_run), by epoch
        self.diverged = False
        self.target_reached_at: int | None = None
        self.rows: list[dict[str, Any]] = list(rows or [])  # a resumed run starts with its earlier rows

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_start = time.perf_counter()
        self.epoch_start_step = int(self.model.optimizer.iterations.numpy())

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        train_seconds = time.perf_counter() - self.epoch_start
        step = int(self.model.optimizer.iterations.numpy())
        # a step budget can cut the last epoch short: count the samples of the steps this epoch took
        samples = min(self.train_size, (step - self.epoch_start_step) * self.global_batch_size)
        train_eval = self.model.evaluate(self.train_eval, verbose=0, return_dict=True)
        validation = validation_metrics(self.model, self.val_inputs, self.val_labels)
        row = {
            **self.columns,
            "epoch": epoch + 1,
            "step": step,
            "train_loss": float(logs["loss"]),
            "train_acc": float(logs["accuracy"]),
            "train_eval_loss": float(train_eval["loss"]),
            "train_eval_acc": float(train_eval["accuracy"]),
            **validation,
            **self._tune_metrics(),
            "lr": float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)),
            "epoch_seconds": None,  # set last: the whole epoch, its probes included
            "samples_per_second": samples / train_seconds,
        }
        if self.precise_bn is not None and math.isfinite(row["train_loss"]):
            row.update(self.precise_bn.columns(step, self.val_inputs, self.val_labels))
        if self.extra_columns is not None and math.isfinite(row["train_loss"]):
            row.update(self.extra_columns(epoch + 1))
        row["epoch_seconds"] = time.perf_counter() - self.epoch_start
        self.rows.append(row)
        self.on_row(row)
        log.info(
            "epoch %d  step %d  loss %.4f  train_acc %.4f  train_eval_acc %.4f  val_loss %.4f  val_acc %.4f  %.0f samples/s",
            row["epoch"], row["step"], row["train_loss"], row["train_acc"], row["train_eval_acc"],
            row["val_loss"], row["val_acc"], row["samples_per_second"],
        )
        if not (math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"])):
            self.diverged = True
            self.model.stop_training = True
            log.warning("loss is not finite at epoch %d: stopping (diverged)", row["epoch"])
        elif self.target_train_loss is not None and row["train_eval_loss"] <= self.target_train_loss:
            self.target_reached_at = row["epoch"]
            self.model.stop_training = True
            log.info("training loss %.4f reached the target %.4f at epoch %d: stopping", row["train_eval_loss"],
                     self.target_train_loss, row["epoch"])

    def _tune_metrics(self) -> dict[str, float]:
        if self.tune_eval is None:
            return {}
        tune = self.model.evaluate(self.tune_eval, verbose=0, return_dict=True)
        return {"tune_loss": float(tune["loss"]), "tune_acc": float(tune["accuracy"])}


def validation_metrics(model: keras.Model, val_inputs, val_labels: np.ndarray) -> dict[str, float]:
    """val_loss, val_acc and each class's recall (`val_recall_<k>`) from one predict pass over the validation set,
    instead of Keras's validation plus a second pass for the recalls."""
    probabilities = model.predict(val_inputs, verbose=0)
    loss, accuracy = classification_metrics(probabilities, val_labels)
    predicted = np.argmax(probabilities, axis=1)
    recalls = {f"val_recall_{k}": float(np.mean(predicted[val_labels == k] == k)) for k in np.unique(val_labels)}
    return {"val_loss": loss, "val_acc": accuracy, **recalls}


def classification_metrics(probabilities: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(loss, accuracy): Keras's sparse categorical cross-entropy (probabilities clipped to [1e-7, 1 - 1e-7])
    and the fraction of samples whose most probable class is the label."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    picked = probabilities[np.arange(len(labels)), labels]
    loss = float(np.mean(-np.log(np.clip(picked, 1e-7, 1 - 1e-7))))
    return loss, float(np.mean(np.argmax(probabilities, axis=1) == labels))


def fit(model: keras.Model, train, plan: BatchPlan, epochs: int,
        callbacks: list[keras.callbacks.Callback], initial_epoch: int = 0) -> None:
    """Train; validation happens in the EpochRecorder, once per epoch."""
    model.fit(
        train, epochs=epochs, initial_epoch=initial_epoch,
        steps_per_epoch=plan.steps_per_epoch, callbacks=callbacks, verbose=0, shuffle=False,
    )
