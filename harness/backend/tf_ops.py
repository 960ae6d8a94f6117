"""The harness's TensorFlow-specific pieces: compiled inference, training-mode batch-norm moments, the training
loss's derivatives (double backprop: a GradientTape inside a GradientTape), seeding, and versions to record."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import keras
import numpy as np
import tensorflow as tf

NAME = "tensorflow"


def versions() -> dict[str, str]:
    return {"backend": NAME, "tensorflow": tf.__version__, "keras": keras.__version__}


def accelerators() -> list[str]:
    """The model of every GPU this process trains on ("NVIDIA H100 80GB HBM3"), none on a CPU."""
    return [tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
            for gpu in tf.config.get_visible_devices("GPU")]


def seed(value: int) -> None:
    """Python's, numpy's and TensorFlow's generators seeded, and TensorFlow's ops deterministic."""
    keras.utils.set_random_seed(value)
    tf.config.experimental.enable_op_determinism()


def as_tensor(array):
    return tf.convert_to_tensor(array)


def inference(model) -> Callable[[np.ndarray], np.ndarray]:
    """x -> the model's outputs in inference mode, as numpy, through one tf.function (retraced rarely)."""
    forward = tf.function(lambda x: model(x, training=False), reduce_retracing=True, autograph=False)

    def run(x):
        return forward(x).numpy()

    run.compiled = forward  # the tf.function, whose tracing count a test reads
    return run


def training_moments(model, layers: list, sample_spec) -> Callable:
    """x -> [(moving_mean, moving_variance) of each layer in `layers`] after one training-mode pass of `model` over
    x, as numpy (with momentum 0 in place, the batch's own statistics). Traced once, for any batch size."""
    spec = tf.TensorSpec([None, *sample_spec[0]], sample_spec[1])

    @tf.function(input_signature=[spec], autograph=False)
    def moments(x):
        model(x, training=True)
        return [(tf.identity(layer.moving_mean.value), tf.identity(layer.moving_variance.value)) for layer in layers]

    def run(x):
        return [(m.numpy(), v.numpy()) for m, v in moments(x)]

    run.compiled = moments  # the tf.function, whose tracing count a test reads
    return run


@contextmanager
def _without_grappler() -> Iterator[None]:
    """TensorFlow's graph optimiser (Grappler) off while a probe's function runs. Every run of a warm worker
    instantiates the functions again (its seeding clears TensorFlow's kernel cache, so that it starts as a fresh
    process does), and Grappler was half of that: the Hessian-vector function's first call in a run 0.10 s -> 0.05 s
    on the 2-core CPU, 0.1-0.3 s in the main job beside another run; its products are as fast without it (20 ms,
    measured) and the same numbers (tested). The setting is the context's, put back after the call."""
    before = tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": before})


def _trace_for_any_batch(function, values, fixed, x, y, *rest) -> None:
    """Trace `function` once, at its first call, for batches of any size, which every later call then reuses: the
    noise scale's batches of 32 and the end-of-run probes' of 512 took a trace each (0.12 s more of the first
    run's probes on the 2-core CPU)."""
    if function.experimental_get_tracing_count() == 0:
        function.get_concrete_function(values, fixed, _any_batch(x), _any_batch(y), *rest)


def _any_batch(tensor) -> tf.TensorSpec:
    return tf.TensorSpec([None, *tensor.shape[1:]], tensor.dtype)


class Derivatives:
    """The summed loss with its gradient, and Hessian-vector products, of one model structure as tf.functions of the
    weights' values (the model called in a keras.StatelessScope on them); every result comes back as numpy."""

    def __init__(self, template: keras.Model):
        trainable, fixed = list(template.trainable_variables), list(template.non_trainable_variables)
        self.sizes = [int(np.prod(v.shape)) for v in trainable]

        def summed_loss(values, fixed_values, x, y):
            mapping = [*zip(trainable, values), *zip(fixed, fixed_values)]
            with keras.StatelessScope(state_mapping=mapping):
                probabilities = template(x, training=False)
                losses = template.losses
            data_loss = tf.reduce_sum(keras.losses.sparse_categorical_crossentropy(y, probabilities))
            regularisation = tf.add_n(losses) if losses else 0.0
            return data_loss + regularisation * tf.cast(tf.shape(y)[0], data_loss.dtype)

        def flat(tensors):
            return tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0)

        def loss_and_gradient(values, fixed_values, x, y):
            with tf.GradientTape() as tape:
                tape.watch(values)
                loss = summed_loss(values, fixed_values, x, y)
            return loss, flat(tape.gradient(loss, values))

        def hessian_vector(values, fixed_values, x, y, vector):
            parts = tf.split(vector, self.sizes)
            with tf.GradientTape() as outer:
                outer.watch(values)
                with tf.GradientTape() as inner:
                    inner.watch(values)
                    loss = summed_loss(values, fixed_values, x, y)
                gradient = inner.gradient(loss, values)
                projected = tf.add_n([tf.reduce_sum(g * tf.reshape(p, tf.shape(g))) for g, p in zip(gradient, parts)])
            return flat(outer.gradient(projected, values))

        # no Python control flow depends on a tensor here: AutoGraph's rewriting of the source would only add
        # to each trace (0.28 s of the gradient's first trace on the 2-core CPU)
        self._loss_and_gradient = tf.function(loss_and_gradient, reduce_retracing=True, autograph=False)
        self._hessian_vector = tf.function(hessian_vector, reduce_retracing=True, autograph=False)

    @staticmethod
    def values(variables: list) -> list:
        """What the functions take for `variables`: their current values."""
        return [tf.convert_to_tensor(v) for v in variables]

    def loss_and_gradient(self, values, fixed, x, y) -> tuple[float, np.ndarray]:
        _trace_for_any_batch(self._loss_and_gradient, values, fixed, x, y)
        with _without_grappler():
            loss, gradient = self._loss_and_gradient(values, fixed, x, y)
        return float(loss), gradient.numpy()

    def hessian_vector(self, values, fixed, x, y, vector: np.ndarray) -> np.ndarray:
        vector = tf.constant(vector, tf.float32)
        _trace_for_any_batch(self._hessian_vector, values, fixed, x, y, vector)
        with _without_grappler():
            return self._hessian_vector(values, fixed, x, y, vector).numpy()

    def hessian_vector_traces(self) -> int:
        """How many times the Hessian-vector function was traced (compiled) in this process."""
        return self._hessian_vector.experimental_get_tracing_count()
