"""Batch-norm statistics recomputed with the current weights, to tell stale moving averages from a real gap.

In inference mode (post-epoch train accuracy, validation) a batch-norm layer normalises with exponential moving
averages of its batch statistics, m·old + (1 − m)·batch. After s steps they still carry m^s of their initial
values (mean 0, variance 1): 0.99^126 ≈ 0.28 after the two epochs batch 64 takes on 4,000 samples. So a large
batch, with few steps, can score near chance in inference mode while its weights fit the data.

The statistics are the exact population statistics of each layer's inputs over a fixed subset of SUBSET (or, for
the key `precise_bn`, that many) training samples, layer by layer in order, with the current weights (Wu & Johnson
2021, "Rethinking 'Batch' in BatchNorm": "precise" statistics), computed the way fvcore's `PreciseBN` computes them: the model runs in training
mode over the subset in batches of BATCH, each layer's momentum set to 0 so that every call leaves the batch's
own mean and variance in its averages, and the per-batch values are combined exactly (mean of the batch means;
mean of variance + mean², minus the mean squared). The subset is one batch, so every layer is normalised with the
subset's own statistics of its inputs while the layers after it are measured: exactly what inference with the
recomputed statistics does, in one pass instead of one per layer. With `precise_bn` above BATCH samples each layer's
statistics still combine every batch exactly, but a layer's inputs then come from layers normalised batch by batch,
as in fvcore's pass: an average of per-batch passes, no longer exact (tests/run/test_precise_bn.py checks it against
recomputing layer by layer in inference mode). Ghost batch norm normalises chunks in training mode, and dropout is
active in it, as in fvcore's pass. With those statistics the model is evaluated on the subset (train_eval_*_
precise_bn: a fixed sample of the training set, the same in every epoch and run) and on the whole validation set
(val_*_precise_bn). The weights are never touched and every non-trainable variable (the moving statistics, a
layer's random state) is put back bit for bit, so training goes on exactly as without the measurement. The key
`precise_bn` (`keep`, before each evaluation and target check) keeps the recomputed statistics instead: training
mode normalises with each batch's own statistics, so the weights train exactly as without it, and the run's val_acc
is then what val_acc_precise_bn measures. Under data
parallelism it runs on a single-device copy of the model. The compiled passes are the backend's (harness.backend
`ops`): a tf.function on TensorFlow, a jitted stateless call on JAX.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Callable

import numpy as np

from harness.backend import ops
from harness.data.batches import Batches
from harness.models.layers import batch_norm_layers

SUBSET = 1024        # training samples the statistics are recomputed on (and train accuracy measured on with them)
BATCH = 1024         # samples per training-mode pass: the whole subset, so the statistics are exact layer by layer
SUBSET_SEED = 1      # the subset depends on the training set only
COLUMNS = ("train_eval_loss_precise_bn", "train_eval_acc_precise_bn", "val_loss_precise_bn", "val_acc_precise_bn",
           "bn_initial_weight")


def initial_weight(layers: list, steps: int) -> float:
    """momentum^steps, the largest over the layers: how much of its initial value (mean 0, variance 1) the most
    lagging moving average still carries after `steps` updates."""
    return max(float(layer.momentum) ** steps for layer in layers)


def subset_indices(train_size: int, samples: int = SUBSET) -> np.ndarray:
    return np.sort(np.random.default_rng(SUBSET_SEED).permutation(train_size)[:samples])


class PreciseBatchNorm:
    """Recomputes a model's batch-norm statistics on a fixed training subset, for the length of a `with` block.

    `twin`: a single-device copy of the model, for a model trained under a distribution strategy: it gets
    the model's current weights each time; None recomputes in the model itself and restores its statistics after.
    `infer`: the model's compiled inference function, where the run has one already (harness.run.measures).
    """

    def __init__(self, model, x: np.ndarray, y: np.ndarray, decode: Callable | None = None, twin=None,
                 infer: Callable | None = None, samples: int = SUBSET):
        self.model, self.twin, self.samples = model, twin, samples
        self.in_memory = decode is None  # samples, not files: validation's batches are kept after the first epoch
        self._val: list | None = None
        self.layers = batch_norm_layers(model)
        chosen = subset_indices(len(x), samples)
        # samples in memory: the batches kept; image files: decoded again each time (memory stays bounded)
        self.batches = Batches(x[chosen], None, BATCH, decode)
        first = self.batches[0]
        self.spec = (tuple(first.shape[1:]), first.dtype)
        self.labels = np.asarray(y)[chosen]
        self._moments: dict[int, Callable] = {}
        self._infer: dict[int, Callable] = {} if infer is None else {id(model): infer}

    @property
    def on_columns_subset(self) -> bool:
        """Recomputed on the *_precise_bn columns' own SUBSET: kept statistics are theirs already."""
        return self.samples == SUBSET

    def columns(self, steps: int, val_inputs, val_labels: np.ndarray, recompute: bool = True) -> dict[str, float]:
        """The epoch's columns: loss and accuracy on the training subset and on validation with the statistics
        recomputed, and bn_initial_weight after `steps` updates. `val_inputs`: batches of validation inputs.
        `recompute` false: the statistics were recomputed on this subset and kept this epoch (keep), read as they
        are."""
        from harness.run.measures import classification_metrics

        if self.in_memory and self._val is None:
            self._val = [np.asarray(batch) for batch in val_inputs]  # a few small arrays, kept
        with (self.recomputed() if recompute else nullcontext(self._target())) as model:
            train_loss, train_acc = classification_metrics(self._predict(model, self.batches), self.labels)
            val_loss, val_acc = classification_metrics(self._predict(model, self._val or val_inputs), val_labels)
        return {"train_eval_loss_precise_bn": train_loss, "train_eval_acc_precise_bn": train_acc,
                "val_loss_precise_bn": val_loss, "val_acc_precise_bn": val_acc,
                "bn_initial_weight": self.initial_weight(steps)}

    def _predict(self, model, batches) -> np.ndarray:
        """Class probabilities in inference mode, batch by batch through one compiled function per model."""
        if id(model) not in self._infer:
            self._infer[id(model)] = ops.inference(model)
        infer = self._infer[id(model)]
        return np.concatenate([infer(batch) for batch in batches])

    @contextmanager
    def recomputed(self):
        """Yields the model (or its single-device twin) with population statistics of the current weights."""
        model = self._target()
        layers = batch_norm_layers(model)
        saved = [np.array(v.numpy(), copy=True) for v in model.non_trainable_variables]
        try:
            self._recompute(model, layers)
            yield model
        finally:
            for variable, value in zip(model.non_trainable_variables, saved):
                variable.assign(value)

    def keep(self) -> None:
        """The key `precise_bn`: the statistics recomputed for the current weights and kept in the model, which
        trains on from them (under data parallelism written into every replica's copy); every other non-trainable
        variable (a layer's random state) put back."""
        model = self._target()
        layers = batch_norm_layers(model)
        moving = {id(v) for layer in layers for v in (layer.moving_mean, layer.moving_variance)}
        saved = [(v, np.array(v.numpy(), copy=True)) for v in model.non_trainable_variables if id(v) not in moving]
        try:
            self._recompute(model, layers)
        finally:
            for variable, value in saved:
                variable.assign(value)
        if model is not self.model:
            for source, kept in zip(layers, self.layers):
                kept.moving_mean.assign(source.moving_mean.numpy())
                kept.moving_variance.assign(source.moving_variance.numpy())

    def initial_weight(self, steps: int) -> float:
        return initial_weight(self.layers, steps)

    def _target(self):
        if self.twin is None:
            return self.model
        self.twin.set_weights(self.model.get_weights())
        return self.twin

    def _recompute(self, model, layers: list) -> None:
        momenta = [layer.momentum for layer in layers]
        first = [np.zeros(layer.moving_mean.shape, np.float64) for layer in layers]
        second = [np.zeros(layer.moving_mean.shape, np.float64) for layer in layers]
        count = 0
        for layer in layers:
            layer.momentum = 0.0  # a training-mode call then leaves each layer's batch statistics in its averages
        try:
            moments = self._moments_function(model, layers)
            for batch in self.batches:
                size = int(batch.shape[0])
                for k, (mean, variance) in enumerate(moments(batch)):
                    mean = mean.astype(np.float64)
                    first[k] += size * mean
                    second[k] += size * (variance.astype(np.float64) + mean ** 2)
                count += size
        finally:
            for layer, momentum in zip(layers, momenta):
                layer.momentum = momentum
        for layer, total, squares in zip(layers, first, second):
            mean = total / count
            layer.moving_mean.assign(mean.astype(np.float32))
            layer.moving_variance.assign(np.maximum(squares / count - mean ** 2, 0.0).astype(np.float32))

    def _moments_function(self, model, layers: list) -> Callable:
        """One compiled training-mode pass returning every layer's batch mean and variance (traced once, for any
        batch size, with momentum 0 in place)."""
        if id(model) not in self._moments:
            self._moments[id(model)] = ops.training_moments(model, layers, self.spec)
        return self._moments[id(model)]


def of_run(model_cfg, model, data_in, decode, replicas: int, infer, samples: int | None = None, beside=None):
    """The run's recomputed batch-norm statistics, on `samples` training samples (None: the fixed SUBSET), for a model
    with batch norm (under data parallelism on its single-device twin, `beside`'s where another PreciseBatchNorm has
    one: it is built once); None for a model without, which pays nothing."""
    from harness.run import devices

    if not batch_norm_layers(model):
        return None
    twin = None if replicas < 2 else (beside.twin if beside is not None and beside.twin is not None else
                                      devices.single_device(model_cfg, model, data_in, replicas))
    return PreciseBatchNorm(model, data_in.x_train, data_in.y_train, decode, twin=twin,
                            infer=None if twin is not None else infer, samples=samples or SUBSET)
