"""What a run measures after each epoch, each a column group of its metrics row: a measure is a callable
`measure(epoch, step) -> {column: value}` (the epoch just ended, counted from 1, and the optimizer's step count),
built before training with what it measures on. The epoch recorder (harness.run.train.EpochRecorder) asks each in
turn; those with `needs_finite_loss` are skipped after an epoch whose training loss is not finite (the run stops
there, diverged).

- Evaluation: the training data in inference mode (train_eval_loss, train_eval_acc), and the held-out tuning
  slice the same way (tune_loss, tune_acc), where tune_fraction > 0;
- Validation: val_loss, val_acc and each class's recall, from one predict pass;
- PreciseBatchNorm (harness.run.precise_bn): the statistics recomputed, for a model with batch norm;
- EpochProbes (harness.probes.in_run): the gradient noise scale and the distance travelled, with probes on.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

UNSMOOTHED = "crossentropy"  # the compiled metric of the plain cross-entropy, with label smoothing (run.train)

class Measure(Protocol):
    needs_finite_loss: bool

    def __call__(self, epoch: int, step: int) -> dict[str, Any]:
        """The epoch's columns."""


class Evaluation:
    """Data evaluated in inference mode after the epoch, as `<prefix>_loss` and `<prefix>_acc`: the training data
    (train_eval: Keras's train_acc is a running average of the epoch's batches, in training mode), or the held-out
    tuning slice (tune, with tune_fraction > 0), which a recipe or a target is chosen on instead of validation."""
    needs_finite_loss = False

    def __init__(self, model, data, prefix: str = "train_eval"):
        self.model, self.data, self.prefix = model, data, prefix

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        measured = self.model.evaluate(self.data, verbose=0, return_dict=True)
        loss = measured.get(UNSMOOTHED, measured["loss"])  # with label smoothing, the compiled loss is smoothed
        return {f"{self.prefix}_loss": float(loss), f"{self.prefix}_acc": float(measured["accuracy"])}


class Validation:
    """val_loss, val_acc and each class's recall (`val_recall_<k>`) from one predict pass over the validation set,
    instead of Keras's validation plus a second pass for the recalls."""
    needs_finite_loss = False

    def __init__(self, model, val_inputs, val_labels: np.ndarray):
        self.model, self.inputs, self.labels = model, val_inputs, val_labels

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        return validation_metrics(self.model, self.inputs, self.labels)


def validation_metrics(model, val_inputs, val_labels: np.ndarray) -> dict[str, float]:
    """Validation's columns for `model` as it is now (also measured at a target: harness.run.target)."""
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


class PreciseStatistics:
    """The batch-norm statistics recomputed for the current weights (harness.run.precise_bn.PreciseBatchNorm), on
    the training subset and on validation, and bn_initial_weight; for a model with batch norm."""
    needs_finite_loss = True

    def __init__(self, precise, val_inputs, val_labels: np.ndarray):
        self.precise, self.val_inputs, self.val_labels = precise, val_inputs, val_labels

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        return self.precise.columns(step, self.val_inputs, self.val_labels)


class Probes:
    """The per-epoch probes (harness.probes.in_run.EpochProbes): noise scale, gradient norms, distance."""
    needs_finite_loss = True

    def __init__(self, epoch_probes):
        self.epoch_probes = epoch_probes

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        return self.epoch_probes(epoch)
