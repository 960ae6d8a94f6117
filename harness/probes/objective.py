"""A model's training loss on a fixed set of samples, as a function of its trainable weights.

The probes (harness.probes.curvature, harness.probes.noise_scale) see a model only through this: the weights as one flat
float64 vector, the loss, its gradient and Hessian-vector products (double backprop: a GradientTape inside a
GradientTape). The loss is the one the model trains on (sparse categorical cross-entropy of its softmax
outputs, plus any regularisation losses), evaluated in inference mode (dropout off, batch norm with its moving
statistics), as a mean over all the samples.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from harness.backend import keras, tf


class Objective:
    """f(w) = mean training loss of `model` over `batches` (a finite tf.data.Dataset of (x, y) batches).

    The compiled functions are traced once per model: `use` points the same objective at other samples.
    """

    def __init__(self, model: keras.Model, batches: tf.data.Dataset):
        self.model = model
        self.variables = list(model.trainable_variables)
        self.sizes = [int(np.prod(v.shape)) for v in self.variables]
        self.size = sum(self.sizes)
        self.use(batches)
        variables = self.variables

        def summed_loss(x, y):
            probabilities = model(x, training=False)
            data_loss = tf.reduce_sum(keras.losses.sparse_categorical_crossentropy(y, probabilities))
            regularisation = tf.add_n(model.losses) if model.losses else 0.0
            return data_loss + regularisation * tf.cast(tf.shape(y)[0], data_loss.dtype)

        def flat(tensors):
            return tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0)

        @tf.function(reduce_retracing=True)
        def loss_and_gradient(x, y):
            with tf.GradientTape() as tape:
                loss = summed_loss(x, y)
            return loss, flat(tape.gradient(loss, variables))

        @tf.function(reduce_retracing=True)
        def hessian_vector(x, y, vector):
            parts = tf.split(vector, self.sizes)
            with tf.GradientTape() as outer:
                with tf.GradientTape() as inner:
                    loss = summed_loss(x, y)
                gradient = inner.gradient(loss, variables)
                projected = tf.add_n([tf.reduce_sum(g * tf.reshape(p, tf.shape(g))) for g, p in zip(gradient, parts)])
            return flat(outer.gradient(projected, variables))

        self._loss_and_gradient, self._hessian_vector = loss_and_gradient, hessian_vector
        self._summed_loss = tf.function(summed_loss, reduce_retracing=True)

    def use(self, batches: tf.data.Dataset) -> None:
        """Measure on `batches` from now on; they are read once and kept in memory as tensors (iterating a
        tf.data pipeline costs more than a small model's pass over them)."""
        self.batches = [(tf.convert_to_tensor(x), tf.convert_to_tensor(y)) for x, y in batches]
        self.samples = sum(int(y.shape[0]) for _, y in self.batches)

    def weights(self) -> np.ndarray:
        return np.concatenate([v.numpy().ravel() for v in self.variables]).astype(np.float64)

    def assign(self, flat: np.ndarray) -> None:
        for variable, part in zip(self.variables, np.split(np.asarray(flat), np.cumsum(self.sizes)[:-1])):
            variable.assign(np.asarray(part.reshape(variable.shape), dtype=variable.dtype))

    def loss(self) -> float:
        return float(sum(self._summed_loss(x, y) for x, y in self.batches)) / self.samples

    def loss_and_gradient(self) -> tuple[float, np.ndarray]:
        total, gradient = 0.0, np.zeros(self.size)
        for x, y in self.batches:
            loss, grad = self._loss_and_gradient(x, y)
            total += float(loss)
            gradient += grad.numpy()
        return total / self.samples, gradient / self.samples

    def batch_gradients(self) -> list[np.ndarray]:
        """The gradient of the mean loss of each batch, in order."""
        return [grad.numpy() / float(tf.shape(y)[0]) for x, y in self.batches
                for _, grad in [self._loss_and_gradient(x, y)]]

    def hessian_vector(self, vector: np.ndarray) -> np.ndarray:
        v = tf.constant(vector, tf.float32)
        product = np.zeros(self.size)
        for x, y in self.batches:
            product += self._hessian_vector(x, y, v).numpy()
        return product / self.samples


def restoring(objective: Objective) -> Callable[[], None]:
    """A function that puts back the weights `objective`'s model has now (after a probe moved them)."""
    saved = [v.numpy() for v in objective.variables]

    def restore() -> None:
        for variable, value in zip(objective.variables, saved):
            variable.assign(value)

    return restore
