"""The harness's JAX-specific pieces: compiled inference, training-mode batch-norm moments, the training loss's
derivatives (jax.grad, and jax.jvp of jax.grad for Hessian-vector products, over `model.stateless_call`),
seeding, and versions to record. Nothing here imports TensorFlow."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import keras
import numpy as np

NAME = "jax"


def _cache_compiled() -> None:
    """XLA's compiled programs kept on disk ($HARNESS_CACHE/jax, else ~/.cache/harness/jax) and shared by every run
    process: the runs of a sweep repeat the same few programs (the train, test and predict steps of one model
    structure and batch size, its initialisers), which JAX otherwise compiles again in each process."""
    folder = Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "harness")) / "jax"
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


_cache_compiled()


def versions() -> dict[str, str]:
    return {"backend": NAME, "jax": jax.__version__, "keras": keras.__version__}


def _keras_without_tensorflow() -> None:
    """Keras on JAX still asks whether TensorFlow is installed, importing it (about 4 s) on first asking: in
    set_random_seed (to seed it too), model.to_json and its data adapters. A JAX run never needs it (image files,
    decoded by tf.io, import it themselves), so Keras's lazy handle on TensorFlow is asked once with TensorFlow
    hidden, as an absent module is (None in sys.modules), and keeps that answer for the process."""
    from keras.src.utils import module_utils  # no public switch; without the handle Keras just imports TensorFlow

    hide = "tensorflow" not in sys.modules
    if hide:
        sys.modules["tensorflow"] = None
    try:
        getattr(getattr(module_utils, "tensorflow", None), "available", None)
    finally:
        if hide and sys.modules.get("tensorflow", 0) is None:
            del sys.modules["tensorflow"]


_keras_without_tensorflow()


def seed(value: int) -> None:
    """Python's, numpy's and Keras's generators seeded; XLA on the CPU is deterministic as it is."""
    keras.utils.set_random_seed(value)


def as_tensor(array):
    return jnp.asarray(array)


def _state(model) -> tuple[list, list]:
    return [v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables]


def inference(model) -> Callable[[np.ndarray], np.ndarray]:
    """x -> the model's outputs in inference mode, as numpy, through one jitted stateless call on the model's
    current weights (read at each call)."""
    forward = jax.jit(lambda trainable, fixed, x: model.stateless_call(trainable, fixed, x, training=False)[0])
    return lambda x: np.asarray(forward(*_state(model), x))


def training_moments(model, layers: list, sample_spec) -> Callable:
    """x -> [(moving_mean, moving_variance) of each layer in `layers`] after one training-mode pass of `model` over
    x, as numpy (with momentum 0 in place when first called: the batch's own statistics). The model's variables
    are not touched: the pass is stateless."""
    positions = {id(v): i for i, v in enumerate(model.non_trainable_variables)}
    where = [(positions[id(layer.moving_mean)], positions[id(layer.moving_variance)]) for layer in layers]
    step = jax.jit(lambda trainable, fixed, x: model.stateless_call(trainable, fixed, x, training=True)[1])

    def moments(x):
        updated = step(*_state(model), x)
        return [(np.asarray(updated[m]), np.asarray(updated[v])) for m, v in where]

    return moments


class Derivatives:
    """The summed loss with its gradient, and Hessian-vector products, of one model structure as jitted functions of the
    weights' values (`stateless_call` on them); every result comes back as numpy."""

    def __init__(self, template: keras.Model):
        shapes = [tuple(v.shape) for v in template.trainable_variables]
        self.sizes = [int(np.prod(s)) for s in shapes]
        splits = np.cumsum(self.sizes)[:-1].tolist()

        def summed_loss(values, fixed_values, x, y):
            probabilities, _, losses = template.stateless_call(values, fixed_values, x, training=False,
                                                               return_losses=True)
            data_loss = jnp.sum(keras.losses.sparse_categorical_crossentropy(y, probabilities))
            regularisation = sum(losses) if losses else 0.0
            return data_loss + regularisation * y.shape[0]

        def flat(arrays):
            return jnp.concatenate([jnp.ravel(a) for a in arrays])

        def loss_and_gradient(values, fixed_values, x, y):
            loss, gradient = jax.value_and_grad(summed_loss)(values, fixed_values, x, y)
            return loss, flat(gradient)

        def hessian_vector(values, fixed_values, x, y, vector):
            tangent = [part.reshape(s) for part, s in zip(jnp.split(vector, splits), shapes)]
            gradient = lambda w: jax.grad(summed_loss)(w, fixed_values, x, y)  # noqa: E731
            return flat(jax.jvp(gradient, (values,), (tangent,))[1])

        self._loss_and_gradient = jax.jit(loss_and_gradient)
        self._hessian_vector = jax.jit(hessian_vector)

    @staticmethod
    def values(variables: list) -> list:
        return [v.value for v in variables]

    def loss_and_gradient(self, values, fixed, x, y) -> tuple[float, np.ndarray]:
        loss, gradient = self._loss_and_gradient(values, fixed, x, y)
        return float(loss), np.asarray(gradient)

    def hessian_vector(self, values, fixed, x, y, vector: np.ndarray) -> np.ndarray:
        return np.asarray(self._hessian_vector(values, fixed, x, y, jnp.asarray(vector, jnp.float32)))

    def hessian_vector_traces(self) -> int:
        """How many programs the jitted Hessian-vector function holds (one per input shape traced)."""
        return self._hessian_vector._cache_size()


def accelerators() -> list[str]:
    """The model of every GPU JAX sees ("NVIDIA H100 80GB HBM3"), none on a CPU."""
    try:
        return [d.device_kind for d in jax.devices("gpu")]
    except RuntimeError:  # no GPU backend
        return []


def device_names(platform: str) -> list[str]:
    """JAX's devices of `platform` ("cpu" or "gpu"), by name; none when JAX has none of that kind."""
    try:
        return [f"{platform}:{d.id}" for d in jax.devices(platform)]
    except RuntimeError:  # no backend of that platform
        return []
