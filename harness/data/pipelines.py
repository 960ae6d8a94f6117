"""The tf.data pipelines a TensorFlow run reads its arrays through: each epoch's sample order (stateless, so a
resumed run sees the batches an uninterrupted one would), image files decoded per batch, training batches that
never span two epochs and evaluation batches (harness.data.batches holds the numpy ones of backend=jax, to the same
contract). Image files are decoded by harness.data.decode. TensorFlow loads with this module: only TensorFlow run
processes import it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from harness.backend import tf
from harness.data.batches import EVAL_BATCH


def epoch_order(train_size: int, shuffle: bool, seed: int, epoch) -> tf.Tensor:
    """Sample order of one epoch: a permutation that depends only on (seed, epoch), or the given order.

    Stateless, so a run resumed at epoch k sees exactly the batches an uninterrupted run would.
    """
    indices = tf.range(train_size, dtype=tf.int64)
    if not shuffle:
        return indices
    seed_pair = tf.stack([tf.constant(seed, tf.int64), tf.cast(epoch, tf.int64)])
    return tf.random.experimental.stateless_shuffle(indices, seed=seed_pair)


def training_dataset(x: np.ndarray, y: np.ndarray, batch_size: int, steps_per_epoch: int, shuffle: bool, seed: int,
                     epochs: int, initial_epoch: int = 0, total_steps: int | None = None,
                     decode: Callable | None = None) -> tf.data.Dataset:
    """Batches of `batch_size` (the global batch) for epochs [initial_epoch, epochs); no batch spans two epochs.

    With `total_steps`, training stops after exactly that many batches overall (the last epoch cut short).
    `decode` turns a batch of x (image paths) into inputs, in parallel with training.
    """
    x_all, y_all = tf.constant(x), tf.constant(y)
    dataset = tf.data.Dataset.range(initial_epoch, epochs).flat_map(
        lambda e: tf.data.Dataset.from_tensor_slices(epoch_order(len(x), shuffle, seed, e)).batch(batch_size)
    )
    if total_steps is not None:
        dataset = dataset.take(total_steps - initial_epoch * steps_per_epoch)
    dataset = dataset.map(lambda idx: (tf.gather(x_all, idx), tf.gather(y_all, idx)))
    if decode is not None:
        dataset = dataset.map(lambda x_batch, y_batch: (decode(x_batch), y_batch), num_parallel_calls=tf.data.AUTOTUNE)
    return untuned(dataset.prefetch(tf.data.AUTOTUNE))


def untuned(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` without tf.data's autotuning model, whose thread an iterator's deletion waits for: on a busy CPU
    that wait held the end of `fit` for 1 to 5 s (py-spy: the main thread in ~LogicalThreadWrapper under
    ~IteratorResource) in 5 of 15 main jobs with probes, and in none of 8 with autotuning off, whose epochs were
    no slower (nor decoding image files: 57 batches of PNGs 0.08-0.10 s either way). AUTOTUNE values then take
    tf.data's static defaults."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def evaluation_batch(samples: int, replicas: int = 1) -> int:
    """Samples per evaluation batch: EVAL_BATCH, or with data parallelism a multiple of the replicas whose last
    batch still gives every replica a sample. tf.distribute fails on a lone batch that does not split evenly
    ("AddN ... must have the same size and shape", e.g. 301 samples on 2 replicas), and a convolution on a
    replica's empty slice of a last batch smaller than the replicas."""
    if replicas <= 1:
        return EVAL_BATCH
    batch = max(replicas, min(EVAL_BATCH, samples) // replicas * replicas)
    if samples % batch and samples % batch < replicas and batch - replicas >= replicas:
        batch -= replicas
    return batch


def evaluation_dataset(x: np.ndarray, y: np.ndarray, decode: Callable | None = None,
                       replicas: int = 1) -> tf.data.Dataset:
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(evaluation_batch(len(x), replicas))
    if decode is not None:
        dataset = dataset.map(lambda x_batch, y_batch: (decode(x_batch), y_batch), num_parallel_calls=tf.data.AUTOTUNE)
    return untuned(dataset.prefetch(tf.data.AUTOTUNE))
