"""What a run measures besides accuracy, to say why a batch size lost (Keskar, McCandlish, Hoffer).

Per epoch: the gradient noise scale on fresh training samples and the distance the weights travelled from their
initial values. After the last epoch: the training loss's top Hessian eigenvalue and trace and Keskar's
sharpness on a fixed probe subset of the training set, into probes.json; the initial and final weights are kept
as plain .npz arrays so every probe can be recomputed later (harness.run.interpolation does, for the interpolation).
"""
from __future__ import annotations

import gc
import logging
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from harness.probes import curvature, noise_scale
from harness.store import probes_file
from harness.store.files import atomic_write

log = logging.getLogger(__name__)

PROBE_SEED = 0          # the probe subset depends on the training set only: the same samples for every seed
NOISE_BATCHES = 8       # small batches of noise_scale.SMALL_BATCH per epoch's noise-scale estimate
PROBE_BATCH = 1024      # samples per Hessian-vector product call


def save_weights(path: Path, model) -> None:
    """Every weight of `model` (trainable ones and batch-norm statistics) in model.weights order, as plain
    arrays `weight_<i>`, with `trainable` marking which are trained."""
    trainable = {id(v) for v in model.trainable_weights}
    arrays = {f"weight_{i}": np.asarray(v.numpy()) for i, v in enumerate(model.weights)}

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, trainable=np.array([id(v) in trainable for v in model.weights]), **arrays)

    atomic_write(Path(path), write)


def load_weights(path: Path) -> tuple[list[np.ndarray], np.ndarray]:
    """(weights in model.weights order, the trainable mask) from save_weights's file."""
    with np.load(Path(path), allow_pickle=False) as saved:
        mask = saved["trainable"]
        return [saved[f"weight_{i}"] for i in range(len(mask))], mask


def probe_indices(train_size: int, samples: int) -> np.ndarray:
    """The fixed probe subset: `samples` training indices (all when the set is smaller), in order."""
    chosen = np.random.default_rng(PROBE_SEED).permutation(train_size)[:samples]
    return np.sort(chosen)


class EpochProbes:
    """Per-epoch columns: noise_scale, grad_norm_sq, grad_trace_cov and weight_distance.

    The noise scale comes from NOISE_BATCHES fresh small batches of training samples per epoch (drawn from the
    run's seed and the epoch, so a resumed run measures the same ones), at the end of the epoch. Its function is
    traced here, before training: traced for the first time in a callback during `fit`, it made TensorFlow's
    `fit` stall for 2.4 s as it returned in 2 to 4 of 6 runs (5-epoch batch-8 runs, measured here), and in
    none of 8 once traced before `fit`. (Such stalls at `fit`'s end, later also seen after a traced function,
    were tf.data's autotuning thread joined as the training iterator is deleted: harness.data.pipelines.untuned.)
    """

    def __init__(self, model, x: np.ndarray, y: np.ndarray, decode: Callable | None, seed: int,
                 initial: list[np.ndarray]):
        from harness.probes.objective import Objective

        self.model, self.x, self.y, self.decode, self.seed = model, x, y, decode, seed
        self.initial = initial  # trainable weights at the start of training
        small = noise_scale.SMALL_BATCH
        self.batches = max(2, min(NOISE_BATCHES, len(y) // small))
        self.small = min(small, len(y) // self.batches)
        self.objective = Objective(self.model, self._batches(0))  # reused every epoch: its functions trace once
        self.objective.batch_gradients()  # traced now (inference mode, stateless: training is unchanged)
        curvature.load_solver_in_background()  # for the sharpness search after the last epoch

    def _batches(self, epoch: int) -> list:
        from harness.data.batches import fixed_batches

        chosen = np.random.default_rng([self.seed, epoch]).permutation(len(self.y))[:self.batches * self.small]
        return fixed_batches(self.x[chosen], self.y[chosen], self.small, self.decode)

    def __call__(self, epoch: int) -> dict[str, float]:
        self.objective.use(self._batches(epoch))
        estimate = noise_scale.from_batch_gradients(self.objective.batch_gradients(), self.small)
        current = [v.numpy() for v in self.model.trainable_weights]
        distance = float(np.sqrt(sum(np.sum((c - w) ** 2) for c, w in zip(current, self.initial))))
        return {**estimate.as_columns(), "weight_distance": distance}


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector does not run until the block ends (its earlier state is restored then).
    SciPy's L-BFGS-B builds a tuple per weight for its bounds: enough new objects to start full collections during
    the probes, over every object of the run (0.15 s in a batch-8 run watched). A sharpness search took 0.13 to
    0.33 s with them, a steady 0.15 to 0.2 s without (4 repeats each, the main job's batch-8 weights). The probes
    leave almost no cyclic garbage (a collection after a batch-8 run's found 4 objects); their arrays go when no
    longer referenced. Pausing, unlike freezing and unfreezing the process's objects, leaves frozen what
    harness.backend froze when Keras loaded."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def final_probes(model, x: np.ndarray, y: np.ndarray, decode: Callable | None, samples: int) -> dict[str, Any]:
    """Top Hessian eigenvalue, Hessian trace and sharpness at both ε of the training loss on the probe subset.

    The model's weights are put back afterwards. The eigenvalue and the trace come from one Lanczos sketch and
    Hutchinson on its remainder (curvature.spectrum: the eigenvalue to an error bound of
    curvature.EIGEN_TOLERANCE, the trace to a standard error of curvature.TRACE_ERROR, each recorded as
    converged or not); the sharpness from L-BFGS-B stopped on convergence (at most SHARPNESS_ITERATIONS).
    """
    with collector_paused():
        return _final_probes(model, x, y, decode, samples)


def _final_probes(model, x: np.ndarray, y: np.ndarray, decode: Callable | None, samples: int) -> dict[str, Any]:
    from harness.data.batches import fixed_batches
    from harness.probes.objective import Objective, restoring

    started = time.perf_counter()
    chosen = probe_indices(len(y), samples)
    objective = Objective(model, fixed_batches(x[chosen], y[chosen], PROBE_BATCH, decode))
    restore = restoring(objective)
    weights = objective.weights()
    probe_loss, probe_gradient = objective.loss_and_gradient()  # at the trained weights: both searches start here
    found = curvature.spectrum(objective.hessian_vector, objective.size)
    eigen, trace = found.eigenvalue, found.trace

    def loss_and_gradient(w: np.ndarray) -> tuple[float, np.ndarray]:
        objective.assign(w)
        return objective.loss_and_gradient()

    try:
        sharp = {eps: curvature.sharpness(loss_and_gradient, weights, eps, start=(probe_loss, probe_gradient))
                 for eps in curvature.SHARPNESS_EPSILONS}
    finally:
        restore()
    return {
        "probe_samples": int(len(chosen)),
        "probe_loss": probe_loss,
        "hessian_top_eigenvalue": eigen.value, "eigen_error": eigen.stderr, "eigen_iterations": eigen.iterations,
        "eigen_converged": eigen.converged,
        "hessian_trace": trace.value, "trace_stderr": trace.stderr, "trace_vectors": trace.iterations,
        "trace_sketch": found.sketch, "trace_converged": trace.converged, "hessian_products": found.products,
        "sharpness": sharp[1e-3].value, "sharpness_5e-4": sharp[5e-4].value,
        "sharpness_iterations": sharp[1e-3].iterations, "sharpness_5e-4_iterations": sharp[5e-4].iterations,
        "sharpness_converged": sharp[1e-3].converged and sharp[5e-4].converged,
        "seconds": time.perf_counter() - started,
    }


def write_final_probes(run_dir: Path, model, x: np.ndarray, y: np.ndarray, decode: Callable | None,
                       samples: int) -> None:
    """probes.json for a finished run; a probe that fails is recorded there (`error`) and the run stays
    completed: its accuracy and metrics do not depend on it."""
    try:
        values = {**final_probes(model, x, y, decode, samples), "error": None}
    except Exception as err:  # a user model without second derivatives, memory, ...
        log.warning("probes failed: %s: %s", type(err).__name__, err)
        values = {"probe_samples": samples, "error": f"{type(err).__name__}: {err}".splitlines()[0]}
    probes_file.write(run_dir, values)
    log.info("probes: %s", ", ".join(f"{k} {v:.4g}" for k, v in values.items()
                                      if isinstance(v, float) and k != "seconds"))
