"""Keras layers the built-in models use beyond Keras's own, and the batch-norm layers of any model (to find them
and set their momentum), written in keras.ops so they run on every backend. Loads Keras: only run processes import
this.

Ghost batch normalisation (Hoffer, Hubara & Soudry 2017, "Train longer, generalize better") normalises a large
batch in small chunks ("ghost batches"), so each sample sees the noisier statistics of a small batch. Keras 3
dropped BatchNormalization's `virtual_batch_size`, which did this in TF1.
"""
from __future__ import annotations

from harness.backend import keras

ops = keras.ops


@keras.saving.register_keras_serializable(package="harness")
class GhostBatchNormalization(keras.layers.BatchNormalization):
    """BatchNormalization over the last axis whose training mode normalises each consecutive chunk of
    `ghost_batch_size` samples with that chunk's own mean and variance (over the chunk's samples and all spatial
    axes, per channel). A batch that is not a multiple of the chunk size ends in one smaller chunk.

    The moving mean and variance move towards the mean of the chunks' statistics, as TF1's `virtual_batch_size`
    did; inference (and a frozen layer) uses them exactly as BatchNormalization does. Under a tf.distribute
    strategy each replica chunks its own slice of the batch and, like BatchNormalization, updates its own copy
    of the moving statistics. Masks are not supported.
    """

    def __init__(self, ghost_batch_size: int, momentum: float = 0.99, epsilon: float = 1e-3, **kwargs):
        if isinstance(ghost_batch_size, bool) or not isinstance(ghost_batch_size, int) or ghost_batch_size < 1:
            raise ValueError(f"ghost_batch_size must be an integer >= 1, got {ghost_batch_size!r}")
        for key, plain in (("axis", -1), ("synchronized", False), ("renorm", False)):
            if kwargs.get(key, plain) != plain:  # get_config carries the plain values back through from_config
                raise ValueError(f"GhostBatchNormalization supports only {key}={plain}, got {kwargs[key]!r}")
        super().__init__(momentum=momentum, epsilon=epsilon, **kwargs)
        self.ghost_batch_size = ghost_batch_size
        self.supports_masking = False

    def call(self, inputs, training=None):
        if not (training and self.trainable):
            return super().call(inputs, training=False)
        x = ops.cast(inputs, keras.backend.result_type(inputs.dtype, "float32"))  # as BatchNormalization: in float32
        chunk, mean, variance = self._chunk_moments(x)
        self.moving_mean.assign(self.moving_mean * self.momentum + ops.mean(mean, 0) * (1.0 - self.momentum))
        self.moving_variance.assign(
            self.moving_variance * self.momentum + ops.mean(variance, 0) * (1.0 - self.momentum))
        # as tf.nn.batch_normalization computes it: x * inv + (offset - mean * inv), inv = scale / sqrt(var + eps)
        inv = ops.rsqrt(_per_sample(variance, chunk, x) + self.epsilon)
        if self.gamma is not None:
            inv = inv * ops.cast(self.gamma, x.dtype)
        shift = -_per_sample(mean, chunk, x) * inv
        if self.beta is not None:
            shift = shift + ops.cast(self.beta, x.dtype)
        return ops.cast(x * inv + shift, self.compute_dtype)

    def _chunk_moments(self, x):
        """Each sample's chunk index, and every chunk's mean and (biased) variance per channel: (chunks, channels).

        Every sample has the same number of spatial positions, so a chunk's statistics are the mean over its
        samples of each sample's spatial mean.
        """
        batch = ops.shape(x)[0]
        chunk = ops.floor_divide(ops.arange(batch), self.ghost_batch_size)
        chunks = (batch + self.ghost_batch_size - 1) // self.ghost_batch_size
        spatial = list(range(1, len(x.shape) - 1))
        counts = ops.segment_sum(ops.ones_like(chunk, dtype=x.dtype), chunk, num_segments=chunks)[:, None]

        def chunk_mean(values):
            per_sample = ops.mean(values, axis=spatial) if spatial else values
            return ops.segment_sum(per_sample, chunk, num_segments=chunks) / counts

        mean = chunk_mean(x)
        variance = chunk_mean(ops.square(x - _per_sample(mean, chunk, x)))
        return chunk, mean, variance

    def get_config(self):
        return {**super().get_config(), "ghost_batch_size": self.ghost_batch_size}


def _per_sample(stats, chunk, x):
    """Chunk statistics (chunks, channels) spread to each sample of `x`, shaped to broadcast against it."""
    return ops.reshape(ops.take(stats, chunk, axis=0), [-1] + [1] * (len(x.shape) - 2) + [x.shape[-1]])


def batch_norm_layers(model) -> list:
    """Every trainable BatchNormalization layer of `model` (ghost batch norm and nested models included); a frozen
    layer keeps the statistics it has, so it is not among them."""
    return [layer for layer in model._flatten_layers(include_self=False, recursive=True)
            if isinstance(layer, keras.layers.BatchNormalization) and layer.trainable]


def set_momentum(model, momentum: float) -> None:
    """`model.bn_momentum`: every BatchNormalization layer's momentum, set after the model is built."""
    for layer in batch_norm_layers(model):
        layer.momentum = float(momentum)
