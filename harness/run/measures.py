"""What a run measures after each epoch, each a column group of its metrics row: a measure is a callable
`measure(epoch, step) -> {column: value}` (the epoch just ended, counted from 1, and the optimizer's step count),
built before training with what it measures on. The epoch recorder (harness.run.train.EpochRecorder) asks each in
turn; those with `needs_finite_loss` are skipped after an epoch whose training loss is not finite (the run stops
there, diverged).

- Evaluation: the training data in inference mode (train_eval_loss, train_eval_acc), and the held-out tuning
  slice the same way (tune_loss, tune_acc), where tune_fraction > 0;
- Validation: val_loss, val_acc and each class's recall;
- PreciseBatchNorm (harness.run.precise_bn): the statistics recomputed, for a model with batch norm;
- EpochProbes (harness.probes.in_run): the gradient noise scale and the distance travelled, with probes on.

Evaluation and validation share the run's one compiled inference function (`inference`), batch by batch, and
read the loss and accuracy off its class probabilities: the same plain cross-entropy for every data set, without
label smoothing or a model's regularisation losses. On one device it is the backend's own (ops.inference), which
the recomputed statistics use too: Keras's evaluate and predict traced a function each, 2.8 s of CPU for
MobileNetV2's first epoch and 0.4 s for the built-in convnet's, against 0.6 s and 0.1 s for this one.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

Infer = Callable[[Any], np.ndarray]  # a batch of inputs -> the model's class probabilities, as numpy


class Measure(Protocol):
    needs_finite_loss: bool

    def __call__(self, epoch: int, step: int) -> dict[str, Any]:
        """The epoch's columns."""


def of_run(cfg, run_dir: Path, resume_epoch: int, model, data_in, decode, infer: Infer, train_eval, val_inputs,
           tune_eval, precise: Callable, kept=None) -> list[Measure]:
    """What a run measures after each epoch, in its metrics' column order: the training data and validation, the
    tuning slice (tune_fraction > 0), the recomputed batch-norm statistics (`precise(kept)`: a model with batch norm's
    harness.run.precise_bn.PreciseBatchNorm, else None) and the per-epoch probes (probes on); `kept`, the key
    precise_bn's PreciseBatchNorm, recomputes and keeps the statistics before all of them."""
    epoch_probes = _epoch_probes(cfg, run_dir, resume_epoch, model, data_in, decode) if cfg.train.probes else None
    # after the probes: traced first. The key precise_bn on the columns' own subset already keeps those statistics
    # before the evaluations: the columns read them as kept, with no second recomputation (nor a second twin)
    fresh = kept is not None and kept.on_columns_subset
    precise = kept if fresh else precise(kept)
    found = [KeepPreciseStatistics(kept)] if kept is not None else []
    found += [Evaluation(infer, train_eval), Validation(infer, val_inputs, data_in.y_val)]
    found += [Evaluation(infer, tune_eval, "tune")] if tune_eval is not None else []
    found += [PreciseStatistics(precise, val_inputs, data_in.y_val, fresh)] if precise is not None else []
    return found + ([Probes(epoch_probes)] if epoch_probes is not None else [])


def _epoch_probes(cfg, run_dir: Path, resume_epoch: int, model, data_in, decode):
    """The per-epoch probes; the initial weights are saved before the first epoch, so a resumed run measures its
    distance from the same start."""
    from harness.probes import in_run as probes
    from harness.store import layout

    path = run_dir / layout.INITIAL_WEIGHTS
    if not resume_epoch or not path.exists():
        probes.save_weights(path, model)
    weights, trainable = probes.load_weights(path)
    initial = [w for w, t in zip(weights, trainable) if t]
    return probes.EpochProbes(model, data_in.x_train, data_in.y_train, decode, cfg.train.seed, initial)


def inference(model, replicas: int = 1) -> Infer:
    """The run's inference function for every measurement: ops.inference on one device (traced once per input
    shape); under data parallelism Keras's predict, which splits each batch over the replicas."""
    if replicas > 1:
        return lambda x: model.predict(x, batch_size=int(x.shape[0]), verbose=0)
    from harness.backend import ops

    return ops.inference(model)


def batches_of(data):
    """What a run's evaluation data yields batch by batch: a tf.data pipeline as it is, numpy batches (backend=jax,
    harness.run.train.ArrayDataset) from their list."""
    return getattr(data, "batches", data)


class Evaluation:
    """Data evaluated in inference mode after the epoch, as `<prefix>_loss` and `<prefix>_acc`: the training data
    (train_eval: Keras's train_acc is a running average of the epoch's batches, in training mode), or the held-out
    tuning slice (tune, with tune_fraction > 0), which a recipe or a target is chosen on instead of validation.
    `data`: (inputs, labels) batches, read one at a time: only each sample's loss and hit are kept."""
    needs_finite_loss = False

    def __init__(self, infer: Infer, data, prefix: str = "train_eval"):
        self.infer, self.data, self.prefix = infer, data, prefix

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        losses, hits = zip(*(sample_metrics(self.infer(x), np.asarray(y)) for x, y in batches_of(self.data)))
        return {f"{self.prefix}_loss": float(np.mean(np.concatenate(losses))),
                f"{self.prefix}_acc": float(np.mean(np.concatenate(hits)))}


class Validation:
    """val_loss, val_acc and each class's recall (`val_recall_<k>`) from one inference pass over the validation
    set, instead of Keras's validation plus a second pass for the recalls."""
    needs_finite_loss = False

    def __init__(self, infer: Infer, val_inputs, val_labels: np.ndarray):
        self.infer, self.inputs, self.labels = infer, val_inputs, val_labels

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        return validation_metrics(self.infer, self.inputs, self.labels)


def validation_metrics(infer: Infer, val_inputs, val_labels: np.ndarray) -> dict[str, float]:
    """Validation's columns for the model as it is now (also measured at a target: harness.run.target).
    `val_inputs`: batches of inputs."""
    probabilities = np.concatenate([infer(x) for x in batches_of(val_inputs)])
    loss, accuracy = classification_metrics(probabilities, val_labels)
    predicted = np.argmax(probabilities, axis=1)
    recalls = {f"val_recall_{k}": float(np.mean(predicted[val_labels == k] == k)) for k in np.unique(val_labels)}
    return {"val_loss": loss, "val_acc": accuracy, **recalls}


def classification_metrics(probabilities: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(loss, accuracy) over the samples: their mean `sample_metrics`."""
    losses, hits = sample_metrics(probabilities, labels)
    return float(np.mean(losses)), float(np.mean(hits))


def sample_metrics(probabilities: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's sparse categorical cross-entropy as Keras computes it from probabilities (clipped to
    [1e-7, 1 - 1e-7]), and whether its most probable class is its label."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    picked = probabilities[np.arange(len(labels)), labels]
    return -np.log(np.clip(picked, 1e-7, 1 - 1e-7)), np.argmax(probabilities, axis=1) == labels


class PreciseStatistics:
    """The batch-norm statistics recomputed for the current weights (harness.run.precise_bn.PreciseBatchNorm), on
    the training subset and on validation, and bn_initial_weight; for a model with batch norm."""
    needs_finite_loss = True

    def __init__(self, precise, val_inputs, val_labels: np.ndarray, fresh: bool = False):
        self.precise, self.val_inputs, self.val_labels = precise, val_inputs, val_labels
        self.fresh = fresh  # the statistics were recomputed on this subset and kept this epoch already

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        return self.precise.columns(step, self.val_inputs, self.val_labels, recompute=not self.fresh)


class KeepPreciseStatistics:
    """The key precise_bn: before the epoch's evaluations, the batch-norm statistics recomputed for the current
    weights and kept (harness.run.precise_bn.PreciseBatchNorm.keep); no columns of its own."""
    needs_finite_loss = False  # it must come before the evaluations, which run whatever the loss
    timing = "precise_bn"

    def __init__(self, kept):
        self.kept = kept

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        self.kept.keep()
        return {}


class Probes:
    """The per-epoch probes (harness.probes.in_run.EpochProbes): noise scale, gradient norms, distance."""
    needs_finite_loss = True
    timing = "epoch_probes"  # its seconds in run.json's timings (the others': evaluation)

    def __init__(self, epoch_probes):
        self.epoch_probes = epoch_probes

    def __call__(self, epoch: int, step: int) -> dict[str, float]:
        return self.epoch_probes(epoch)
