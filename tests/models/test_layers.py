"""Ghost batch normalisation (harness.models.layers) against a numpy reference: per-chunk statistics in training, the
moving statistics, inference, plain BatchNormalization as the one-chunk case (each on both backends: the layer is
keras.ops), serialisation, and two replicas."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from harness.backend import keras
from harness.models.layers import GhostBatchNormalization

EPSILON = 1e-3


def _data(shape, seed=0):
    """Channels with different means and scales, as after a convolution."""
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) * rng.uniform(0.5, 3.0, shape[-1]) + rng.uniform(-2, 2, shape[-1])).astype("float32")


def _chunk_moments(x, ghost):
    """Each consecutive chunk's mean and variance over its samples and spatial axes, per channel."""
    axes = tuple(range(x.ndim - 1))
    chunks = [x[start:start + ghost] for start in range(0, len(x), ghost)]
    return [c.mean(axis=axes) for c in chunks], [c.var(axis=axes) for c in chunks], chunks


def _reference(x, ghost, gamma, beta):
    means, variances, chunks = _chunk_moments(x, ghost)
    return np.concatenate([(c - m) / np.sqrt(v + EPSILON) * gamma + beta for c, m, v in zip(chunks, means, variances)])


def _layer(ghost, x, momentum=0.99):
    """A built layer with gamma and beta away from 1 and 0, so that a test also sees them applied."""
    layer = GhostBatchNormalization(ghost, momentum=momentum, epsilon=EPSILON)
    layer.build(x.shape)
    channels = x.shape[-1]
    layer.gamma.assign(np.linspace(0.5, 2.0, channels))
    layer.beta.assign(np.linspace(-1.0, 1.0, channels))
    return layer


@pytest.mark.parametrize("shape,ghost", [
    ((12, 5), 4),      # dense features, three whole chunks
    ((10, 5), 4),      # a batch that is not a multiple of the chunk: chunks of 4, 4 and 2
    ((11, 7, 3), 4),   # Conv1D activations (batch, length, channels): statistics over the length too
    ((6, 4, 4, 2), 3), # Conv2D activations
])
def test_training_normalises_each_chunk_with_its_own_statistics(shape, ghost, backend):
    x = _data(shape)
    layer = _layer(ghost, x)
    out = np.asarray(layer(x, training=True))
    expected = _reference(x, ghost, np.asarray(layer.gamma), np.asarray(layer.beta))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_training_compiles_with_xla_as_keras_does_on_one_gpu():
    """Keras compiles with XLA by default on a single GPU, where shapes must be known when it compiles."""
    from harness.backend import tf

    x = _data((10, 7, 3))
    layer = _layer(4, x)
    out = tf.function(lambda t: layer(t, training=True), jit_compile=True)(x)
    np.testing.assert_allclose(out, _reference(x, 4, np.asarray(layer.gamma), np.asarray(layer.beta)),
                               rtol=1e-4, atol=1e-4)


def test_moving_statistics_move_towards_the_mean_of_the_chunk_statistics(backend):
    x = _data((10, 6, 3))
    layer = _layer(4, x, momentum=0.9)
    layer(x, training=True)
    means, variances, _ = _chunk_moments(x, 4)  # chunks of 4, 4, 2, weighted alike as TF1's virtual batches
    np.testing.assert_allclose(layer.moving_mean, 0.9 * 0.0 + 0.1 * np.mean(means, axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.moving_variance, 0.9 * 1.0 + 0.1 * np.mean(variances, axis=0), rtol=1e-5)


def test_inference_uses_the_moving_statistics_as_batch_normalization_does(backend):
    x = _data((10, 6, 3))
    layer = _layer(4, x, momentum=0.5)
    layer(x, training=True)
    plain = keras.layers.BatchNormalization(epsilon=EPSILON)
    plain.build(x.shape)
    plain.set_weights(layer.get_weights())  # gamma, beta, moving mean, moving variance: the same order
    mean, variance = np.asarray(layer.moving_mean), np.asarray(layer.moving_variance)
    expected = (x - mean) / np.sqrt(variance + EPSILON) * np.asarray(layer.gamma) + np.asarray(layer.beta)
    for out in (layer(x, training=False), layer(x), plain(x, training=False)):
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    layer.trainable = False  # a frozen layer runs in inference mode, as BatchNormalization does
    np.testing.assert_allclose(layer(x, training=True), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ghost", [8, 64])
def test_a_chunk_as_large_as_the_batch_is_plain_batch_normalization(ghost, backend):
    x = _data((8, 6, 3))
    ghostly, plain = _layer(ghost, x), keras.layers.BatchNormalization(epsilon=EPSILON)
    plain.build(x.shape)
    plain.set_weights(ghostly.get_weights())
    np.testing.assert_allclose(ghostly(x, training=True), plain(x, training=True), rtol=1e-4, atol=1e-4)
    for ours, theirs in zip(ghostly.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_the_layer_serialises_through_get_config():
    layer = GhostBatchNormalization(32, momentum=0.9, epsilon=1e-4, name="ghost")
    again = keras.layers.deserialize(keras.layers.serialize(layer))
    assert type(again) is GhostBatchNormalization
    assert (again.ghost_batch_size, again.momentum, again.epsilon, again.name) == (32, 0.9, 1e-4, "ghost")


@pytest.mark.parametrize("kwargs", [{"ghost_batch_size": 0}, {"ghost_batch_size": 2.5},
                                    {"ghost_batch_size": 4, "axis": 1}, {"ghost_batch_size": 4, "synchronized": True}])
def test_what_it_does_not_support_is_refused(kwargs):
    with pytest.raises(ValueError, match="ghost_batch_size|supports only"):
        GhostBatchNormalization(**kwargs)


MIRRORED = """
import json, numpy as np
from harness.backend import keras, tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                           [tf.config.LogicalDeviceConfiguration()] * 2)
from harness.models.layers import GhostBatchNormalization
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
x = np.load({path!r})
batch = next(iter(strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(x).batch(len(x)))))

def train_once(layer):
    with strategy.scope():
        layer.build(x.shape)
    out = tf.function(lambda b: strategy.run(lambda t: layer(t, training=True), args=(b,)))(batch)
    return np.concatenate([np.asarray(o) for o in strategy.experimental_local_results(out)]), layer.moving_mean

chunked, moving_mean = train_once(GhostBatchNormalization(4, momentum=0.5))
np.save({path!r}, chunked)
slice_out, slice_mean = train_once(GhostBatchNormalization(6, momentum=0.5))
plain_out, plain_mean = train_once(keras.layers.BatchNormalization(momentum=0.5))
print(json.dumps({{"replicas": strategy.num_replicas_in_sync, "moving_mean": np.asarray(moving_mean).tolist(),
                  "as_plain": float(max(np.abs(slice_out - plain_out).max(), np.abs(slice_mean - plain_mean).max()))}}))
"""


def test_under_mirrored_strategy_each_replica_chunks_its_own_slice(tmp_path):
    """Two logical CPU devices (a fresh process: they are fixed once TensorFlow starts), a global batch of 12:
    each replica gets 6 samples and normalises them in chunks of 4 and 2, never a chunk across the two slices.
    With one chunk per slice it is Keras's BatchNormalization, moving statistics included: each replica updates
    its own copy of them (aggregation NONE), and reading them gives the first replica's."""
    x = _data((12, 5, 3)) + np.arange(12, dtype=np.float32)[:, None, None]  # the two slices differ in mean
    path = tmp_path / "x.npy"
    np.save(path, x)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MIRRORED.format(path=str(path)))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["replicas"] == 2 and result["as_plain"] < 1e-4
    ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
    expected = np.concatenate([_reference(x[:6], 4, ones, zeros), _reference(x[6:], 4, ones, zeros)])
    np.testing.assert_allclose(np.load(path), expected, rtol=1e-4, atol=1e-4)
    first_replica = 0.5 * np.mean(_chunk_moments(x[:6], 4)[0], axis=0)
    np.testing.assert_allclose(result["moving_mean"], first_replica, rtol=1e-5, atol=1e-6)
