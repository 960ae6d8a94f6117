"""Compile and fit, with one callback that turns every epoch into a tidy metrics row (its measurements from
harness.run.measures) and the callbacks that stop a run: divergence, a target training loss."""
from __future__ import annotations

import logging
import math
import re
import time
from typing import Any, Callable

from harness.backend import keras
from harness.config.batching import BatchPlan
from harness.config.recipe import BETA_2_KEYWORD, EPSILON_KEYWORD, MOMENTUM_KEYWORD, OPTIMIZERS
from harness.config.schema import TrainConfig
from harness.run.measures import Measure

log = logging.getLogger(__name__)


def make_optimizer(train: TrainConfig, lr, model: keras.Model) -> keras.optimizers.Optimizer:
    """The run's optimizer: its Keras class with the recipe's momentum, nesterov, weight decay, beta_2 and epsilon
    where set (None keeps the class's own). Decoupled weight decay spares biases and batch-norm parameters (every 1-D weight, He et
    al. 2019); Muon leaves the output layer, and every weight that is not 2-D, to its internal AdamW (its docs), and
    a weight_decay sets both its decays."""
    class_name, options = OPTIMIZERS[train.optimizer]
    options = dict(options)
    if train.momentum is not None:
        options[MOMENTUM_KEYWORD[class_name]] = train.momentum
    if train.nesterov:
        options["nesterov"] = True
    if train.beta_2 is not None:
        options[BETA_2_KEYWORD[class_name]] = train.beta_2
    if train.epsilon is not None:
        options[EPSILON_KEYWORD[class_name]] = train.epsilon
    if train.weight_decay is not None:
        options["weight_decay"] = train.weight_decay
        if class_name == "Muon":
            options["adam_weight_decay"] = train.weight_decay
    if class_name == "Muon":
        options["adam_lr_ratio"] = 1.0  # its AdamW steps at the same learning rate
        output = next(layer for layer in reversed(model.layers) if layer.trainable_weights)
        options["exclude_layers"] = [f"^{re.escape(w.path)}$" for w in output.trainable_weights]  # regexes
    optimizer = getattr(keras.optimizers, class_name)(lr, **options)
    if optimizer.weight_decay:
        optimizer.exclude_from_weight_decay(var_list=[w for w in model.trainable_weights if len(w.shape) <= 1])
    return optimizer


class SmoothedSparseCrossentropy(keras.losses.Loss):
    """Sparse categorical cross-entropy against labels smoothed by `label_smoothing` (Szegedy et al. 2016: the
    one-hot target becomes (1 - s) one_hot + s / K), since Keras's sparse loss takes no smoothing."""

    def __init__(self, label_smoothing: float, num_classes: int, name: str = "smoothed_crossentropy"):
        super().__init__(name=name)
        self.label_smoothing, self.num_classes = float(label_smoothing), int(num_classes)

    def call(self, y_true, y_pred):
        labels = keras.ops.cast(keras.ops.reshape(y_true, (-1,)), "int32")
        target = keras.ops.one_hot(labels, self.num_classes)
        return keras.losses.categorical_crossentropy(target, y_pred, label_smoothing=self.label_smoothing)

    def get_config(self):
        return {"label_smoothing": self.label_smoothing, "num_classes": self.num_classes, "name": self.name}


def compile_model(model: keras.Model, optimizer: keras.optimizers.Optimizer, steps_per_execution: int = 1,
                  label_smoothing: float = 0.0, num_classes: int | None = None) -> None:
    """Compile for integer class labels; call inside the strategy's scope. With label smoothing the training loss
    is smoothed; what the run reports after each epoch is the plain cross-entropy (harness.run.measures).

    On TensorFlow several steps per compiled call (a tf.while_loop inside one tf.function) remove Keras's per-step
    Python overhead, which dominates small-batch training of small models; the arithmetic is the same. On JAX
    Keras runs them as consecutive jitted steps, and callbacks between calls see the state of the last.
    """
    loss: Any = "sparse_categorical_crossentropy"
    if label_smoothing > 0:
        loss = SmoothedSparseCrossentropy(label_smoothing, num_classes or model.output_shape[-1])
    model.compile(
        optimizer=optimizer,
        loss=loss,
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
    """After each epoch, one tidy row handed to `on_row`: `columns` (the run's config and plan), the epoch and step,
    the training loss and accuracy Keras kept during the epoch (a running average, in training mode), each measure's
    columns (harness.run.measures; those that need a finite loss only after one), the learning rate the epoch
    trained at (its last update's, `rate_of_step`: a ramp's phase's, not the next phase's; without it the
    optimizer's now, the next update's) and the epoch's speed. `rows`: a resumed run's earlier rows, which `rows`
    goes on from. `seconds`: where the epochs' time went, summed over them: training, each measure's kind (its
    `timing`, else evaluation), writing the row."""

    def __init__(self, columns: dict[str, Any], on_row: Callable[[dict[str, Any]], None], measures: list[Measure],
                 train_size: int, global_batch_size: int, rows: list[dict[str, Any]] | None = None,
                 rate_of_step: Callable[[int], float] | None = None):
        super().__init__()
        self.rate_of_step = rate_of_step
        self.columns, self.on_row = columns, on_row
        self.measures = [m for m in measures if not m.needs_finite_loss]
        self.after_finite_loss = [m for m in measures if m.needs_finite_loss]
        self.train_size, self.global_batch_size = train_size, global_batch_size
        self.rows: list[dict[str, Any]] = list(rows or [])
        self.seconds: dict[str, float] = {"training": 0.0, "evaluation": 0.0}

    def enter_phase(self, columns: dict[str, Any], global_batch_size: int) -> None:
        """A ramp's next phase: its batch plan's columns (and peak learning rate) in the rows from now on."""
        self.columns = {**self.columns, **columns}
        self.global_batch_size = global_batch_size

    def _measure(self, measure: Measure, epoch: int, step: int) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return measure(epoch, step)
        finally:
            kind = getattr(measure, "timing", "evaluation")
            self.seconds[kind] = self.seconds.get(kind, 0.0) + time.perf_counter() - started

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_start = time.perf_counter()
        self.epoch_start_step = int(self.model.optimizer.iterations.numpy())

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        train_seconds = time.perf_counter() - self.epoch_start
        step = int(self.model.optimizer.iterations.numpy())
        # a step budget can cut the last epoch short: count the samples of the steps this epoch took
        samples = min(self.train_size, (step - self.epoch_start_step) * self.global_batch_size)
        row = {**self.columns, "epoch": epoch + 1, "step": step, "train_loss": float(logs["loss"]),
               "train_acc": float(logs["accuracy"])}
        self.seconds["training"] += train_seconds
        for measure in self.measures:
            row.update(self._measure(measure, epoch + 1, step))
        rate = self.rate_of_step(max(step - 1, 0)) if self.rate_of_step is not None else \
            keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)
        row.update(lr=float(rate),
                   epoch_seconds=None,  # set last: the whole epoch, its measures included
                   samples_per_second=samples / train_seconds)
        if math.isfinite(row["train_loss"]):
            for measure in self.after_finite_loss:
                row.update(self._measure(measure, epoch + 1, step))
        row["epoch_seconds"] = time.perf_counter() - self.epoch_start
        self.rows.append(row)
        started = time.perf_counter()
        self.on_row(row)
        self.seconds["writing"] = self.seconds.get("writing", 0.0) + time.perf_counter() - started
        log.info("epoch %d  step %d  loss %.4f  train_acc %.4f  train_eval_acc %.4f  val_loss %.4f  val_acc %.4f  "
                 "%.0f samples/s", row["epoch"], row["step"], row["train_loss"], row["train_acc"],
                 row.get("train_eval_acc", math.nan), row.get("val_loss", math.nan), row.get("val_acc", math.nan),
                 row["samples_per_second"])


class StopOnDivergence(keras.callbacks.Callback):
    """Stops training after an epoch whose training or validation loss is not finite, and remembers it
    (`diverged`: the run's status). After the recorder, whose `rows` it reads."""

    def __init__(self, rows: list[dict[str, Any]]):
        super().__init__()
        self.rows, self.diverged = rows, False

    def on_epoch_end(self, epoch, logs=None):
        row = self.rows[-1]
        if not (math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"])):
            self.diverged = True
            self.model.stop_training = True
            log.warning("loss is not finite at epoch %d: stopping (diverged)", row["epoch"])


class StopAtTrainLoss(keras.callbacks.Callback):
    """target_train_loss: stops training after the first epoch whose training loss in inference mode reaches
    `target` (`reached_at`: that epoch). After the recorder, whose `rows` it reads."""

    def __init__(self, target: float, rows: list[dict[str, Any]]):
        super().__init__()
        self.target, self.rows = target, rows
        self.reached_at: int | None = None

    def on_epoch_end(self, epoch, logs=None):
        row = self.rows[-1]
        finite = math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"])  # else it diverged
        if self.reached_at is None and finite and row["train_eval_loss"] <= self.target:
            self.reached_at = row["epoch"]
            self.model.stop_training = True
            log.info("training loss %.4f reached the target %.4f at epoch %d: stopping", row["train_eval_loss"],
                     self.target, row["epoch"])


def fit(model: keras.Model, train, plan: BatchPlan, epochs: int,
        callbacks: list[keras.callbacks.Callback], initial_epoch: int = 0) -> None:
    """Train; validation is one of the EpochRecorder's measures, once per epoch."""
    _build_before_tracing(model, train)
    model.fit(
        train, epochs=epochs, initial_epoch=initial_epoch,
        steps_per_epoch=plan.steps_per_epoch, callbacks=callbacks, verbose=0, shuffle=False,
    )


def _build_before_tracing(model: keras.Model, train) -> None:
    """Without a distribution strategy Keras (3.15, TensorFlow) leaves the optimizer's and the metrics' variables to
    the first trace of its training step, and a tf.function that creates variables is traced a second time:
    MobileNetV2's step, 7 s of CPU to trace, was traced twice. Built first, as Keras itself does under a strategy,
    the step is traced once (tests/run/test_train.py); the numbers are the same. JAX's fit does it already."""
    spec = getattr(train, "element_spec", None)  # a tf.data.Dataset: TensorFlow's training batches
    if spec is None or getattr(model, "_distribute_strategy", None) is not None:  # Keras builds these itself
        return
    with model.distribute_strategy.scope():
        model._symbolic_build(data_batch=spec)


def trainable_parameters(model) -> int:
    """The model's trainable weights, counted (capacity's parameters per training sample)."""
    return int(sum(math.prod(weight.shape) for weight in model.trainable_weights))
