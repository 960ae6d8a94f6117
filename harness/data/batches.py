"""Numpy batches for a backend without tf.data (backend=jax): each epoch's sample order (seeded and stateless, so
a resumed run sees the batches an uninterrupted one would), training batches that never span two epochs,
evaluation batches, and the fixed subsets the probes measure on. The same contract as harness.data.pipelines
(tests/data/test_pipelines.py runs both), with numpy's generator instead of TensorFlow's: the orders differ
between the backends, not their properties. Image files are decoded per batch by `decoder`, which loads
TensorFlow (tf.io's decoders) only for files; arrays in memory never do.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

EVAL_BATCH = 1024  # samples per inference-mode batch


def epoch_order(train_size: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """Sample order of one epoch: a permutation that depends only on (seed, epoch), or the given order."""
    if not shuffle:
        return np.arange(train_size)
    return np.random.default_rng([seed, epoch]).permutation(train_size)


def as_array(batch) -> np.ndarray:
    return np.asarray(batch)


def training_batches(x: np.ndarray, y: np.ndarray, batch_size: int, steps_per_epoch: int, shuffle: bool, seed: int,
                     epochs: int, initial_epoch: int = 0, total_steps: int | None = None,
                     decode: Callable | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(x, y) batches of `batch_size` for epochs [initial_epoch, epochs); no batch spans two epochs. With
    `total_steps`, exactly that many batches overall (the last epoch cut short)."""
    left = None if total_steps is None else total_steps - initial_epoch * steps_per_epoch
    for epoch in range(initial_epoch, epochs):
        order = epoch_order(len(x), shuffle, seed, epoch)
        for start in range(0, len(order), batch_size):
            if left is not None and left <= 0:
                return
            chosen = order[start:start + batch_size]
            inputs = x[chosen]
            yield (inputs if decode is None else as_array(decode(inputs))), y[chosen]
            if left is not None:
                left -= 1


class Batches:
    """Fixed (x, y) batches in order, read as often as needed: kept decoded in memory for arrays, decoded again
    at each pass for image files (memory stays bounded). `y` may be None (inputs only)."""

    def __init__(self, x: np.ndarray, y: np.ndarray | None, batch: int = EVAL_BATCH, decode: Callable | None = None):
        self.x, self.y, self.batch, self.decode = x, y, batch, decode
        self.kept = None if decode is not None else [self._get(i) for i in range(len(self))]

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch)

    def _get(self, i: int):
        inputs = self.x[i * self.batch:(i + 1) * self.batch]
        if self.decode is not None:
            inputs = as_array(self.decode(inputs))
        return inputs if self.y is None else (inputs, self.y[i * self.batch:(i + 1) * self.batch])

    def __getitem__(self, i: int):
        if self.kept is not None:
            return self.kept[i]
        return self._get(i)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def fixed_batches(x: np.ndarray, y: np.ndarray, batch: int, decode: Callable | None) -> list:
    """(x, y) batches decoded once and kept: for measurements that pass over the same samples many times."""
    return list(Batches(x, y, batch, decode)) if decode is not None else Batches(x, y, batch).kept
