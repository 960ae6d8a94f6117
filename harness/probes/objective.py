"""A model's training loss on a fixed set of samples, as a function of its trainable weights.

The probes (harness.probes.curvature, harness.probes.noise_scale) see a model only through this: the weights as
one flat float64 vector, the loss, its gradient and Hessian-vector products (the backend's own autodiff:
harness.backend's `ops.Derivatives`, double backprop on TensorFlow, jax.jvp of jax.grad on JAX), functions of the
weights' values traced once per model structure and process. The loss
is the one the model trains on (sparse categorical cross-entropy of its softmax outputs, plus any regularisation
losses), evaluated in inference mode (dropout off, batch norm with its moving statistics), as a mean over all
the samples.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np

from harness.backend import keras, ops

_TRACED: dict[str, Any] = {}  # a model structure (structure_key) -> its functions, for this process


def structure_key(model: keras.Model) -> str:
    """`model`'s JSON config with its own and its layers' names replaced by their positions, and without its
    compile config: Keras numbers the names of every model a process builds (conv1d, conv1d_1, ...), and a
    compiled model's JSON holds its optimizer and learning-rate schedule (a schedule's steps differ with the batch
    size), so two models of one structure, a warm worker's consecutive runs, differ only there. Raises for a
    model without a JSON config."""
    names = {layer.name: f"#{i}" for i, layer in enumerate(model.layers)}
    names[model.name] = "#model"

    def canonical(value: Any) -> Any:
        if isinstance(value, str):
            return names.get(value, value)
        if isinstance(value, list):
            return [canonical(v) for v in value]
        if isinstance(value, dict):
            return {k: canonical(v) for k, v in value.items()}
        return value

    config = json.loads(model.to_json())
    config.pop("compile_config", None)  # how it trains, not what the functions compute
    return json.dumps(canonical(config), sort_keys=True)


def _traced(model: keras.Model):
    """The functions (ops.Derivatives) for `model`'s structure, traced on the first model of that structure in the
    process and reused by every later one (a warm worker's runs, a run's two objectives); for a model without a
    JSON config (a subclassed user model), its own."""
    try:
        key = structure_key(model)
    except Exception:  # not serialisable: no structure to share
        return ops.Derivatives(model)
    if key not in _TRACED:
        _TRACED[key] = ops.Derivatives(model)
    return _TRACED[key]


class Objective:
    """f(w) = mean training loss of `model` over `batches` (a finite iterable of (x, y) numpy batches).

    The functions are traced once per model structure and process (_traced); `use` points the same objective
    at other samples.
    """

    def __init__(self, model: keras.Model, batches):
        self.model = model
        self.variables = list(model.trainable_variables)
        self.fixed = list(model.non_trainable_variables)
        self.sizes = [int(np.prod(v.shape)) for v in self.variables]
        self.size = sum(self.sizes)
        self.use(batches)
        self.traced = _traced(model)

    def _values(self) -> tuple[list, list]:
        """The weights' current values, what the traced functions take."""
        return self.traced.values(self.variables), self.traced.values(self.fixed)

    def use(self, batches) -> None:
        """Measure on `batches` from now on; they are read once and kept in memory as the backend's tensors."""
        self.batches = [(ops.as_tensor(x), ops.as_tensor(y)) for x, y in batches]
        self.samples = sum(int(y.shape[0]) for _, y in self.batches)

    def weights(self) -> np.ndarray:
        return np.concatenate([v.numpy().ravel() for v in self.variables]).astype(np.float64)

    def assign(self, flat: np.ndarray) -> None:
        for variable, part in zip(self.variables, np.split(np.asarray(flat), np.cumsum(self.sizes)[:-1])):
            variable.assign(np.asarray(part.reshape(variable.shape), dtype=variable.dtype))

    def loss_and_gradient(self) -> tuple[float, np.ndarray]:
        values, fixed = self._values()
        total, gradient = 0.0, np.zeros(self.size)
        for x, y in self.batches:
            loss, grad = self.traced.loss_and_gradient(values, fixed, x, y)
            total += loss
            gradient += grad
        return total / self.samples, gradient / self.samples

    def batch_gradients(self) -> list[np.ndarray]:
        """The gradient of the mean loss of each batch, in order."""
        values, fixed = self._values()
        return [grad / float(y.shape[0]) for x, y in self.batches
                for _, grad in [self.traced.loss_and_gradient(values, fixed, x, y)]]

    def hessian_vector(self, vector: np.ndarray) -> np.ndarray:
        values, fixed = self._values()
        product = np.zeros(self.size)
        for x, y in self.batches:
            product += self.traced.hessian_vector(values, fixed, x, y, vector)
        return product / self.samples


def restoring(objective: Objective) -> Callable[[], None]:
    """A function that puts back the weights `objective`'s model has now (after a probe moved them)."""
    saved = [v.numpy() for v in objective.variables]

    def restore() -> None:
        for variable, value in zip(objective.variables, saved):
            variable.assign(value)

    return restore
