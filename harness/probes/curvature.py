"""How sharp is a minimum: the Hessian's top eigenvalue and trace, and Keskar et al.'s sharpness (metric 2.1).

Pure numpy and SciPy on callables over flat weight vectors, so each estimator is tested against closed-form
answers without a model; harness.probes.objective supplies the callables for a trained Keras model.

`spectrum` gives both curvature numbers from one set of Hessian-vector products: a Lanczos sketch (a Krylov
basis Q with Q^T H Q tridiagonal) yields the top eigenvalue by Rayleigh-Ritz and the trace of H on span(Q)
exactly; Hutchinson's estimator on the rest, (I - QQ^T) H (I - QQ^T), adds the remainder with its standard
error, vectors being added until that error is TRACE_ERROR of the estimate or the products reach a cap. The
sketch removes the few large eigenvalues that dominate a network's Hessian and Hutchinson's variance, as in
Hutch++ (Meyer, Musco, Musco & Woodruff 2021), with a Krylov sketch in place of one block product (Chen &
Hallman 2023). It replaces power iteration and plain Hutchinson, which stopped on a small change between
steps (a trace could stop at a 20% standard error by chance).
"""
from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

Vector = np.ndarray
EIGEN_TOLERANCE = 1e-3  # PyHessian's, relative
SHARPNESS_EPSILONS = (1e-3, 5e-4)  # Keskar et al. 2017
SHARPNESS_ITERATIONS = 10  # the reference implementations' cap on L-BFGS-B iterations
SHARPNESS_TOLERANCE = 1e-2  # stop once an iteration raises the sharpness by under 1% of its value
SKETCH_MIN, SKETCH_MAX = 15, 40  # Lanczos steps: past a network's few outlying eigenvalues (about one a class)
TRACE_ERROR = 0.05  # the trace's standard error to reach, relative to the estimate
TRACE_MIN_VECTORS = 8  # Hutchinson vectors on the remainder before its standard error is trusted
MAX_PRODUCTS = 100  # Hessian-vector products in all (PyHessian's trace cap)
INVARIANT = 1e-5  # a next Lanczos direction this small against the eigenvalue is float32 rounding, not H


@dataclass(frozen=True)
class Estimate:
    value: float
    iterations: int      # Lanczos steps, Hutchinson vectors or L-BFGS-B iterations
    converged: bool      # stopped by its tolerance, not by its cap
    stderr: float | None = None  # the trace's standard error; the eigenvalue's error bound


@dataclass(frozen=True)
class Spectrum:
    eigenvalue: Estimate  # iterations: Lanczos steps; stderr: the Ritz value's error bound
    trace: Estimate       # iterations: Hutchinson vectors on the remainder; stderr: the trace's standard error
    sketch: int           # Lanczos steps (the sketch's rank)
    products: int         # Hessian-vector products in all


def _lanczos_step(hessian_vector, basis: list[Vector], alphas: list[float], betas: list[float]) -> Vector:
    """One Lanczos step with full reorthogonalisation (the basis stays orthonormal to machine precision, so
    Q^T H Q is the tridiagonal matrix of alphas and betas); returns the unnormalised next direction."""
    q = basis[-1]
    w = hessian_vector(q)
    alphas.append(float(q @ w))
    stacked = np.array(basis)
    for _ in range(2):  # twice is enough (Kahan's "twice is enough")
        w = w - stacked.T @ (stacked @ w)
    betas.append(float(np.linalg.norm(w)))
    return w


def _ritz(alphas: list[float], betas: list[float]) -> tuple[float, float]:
    """(the Ritz value of largest magnitude, its residual norm β_k·|s_k|): for a symmetric H some eigenvalue
    lies within the residual norm of a Ritz value (the sharper residual²/gap bound needs the true gap, which
    Ritz values overstate in a clustered spectrum)."""
    k = len(alphas)
    t = np.diag(alphas) + np.diag(betas[:k - 1], 1) + np.diag(betas[:k - 1], -1)
    values, vectors = np.linalg.eigh(t)
    top = int(np.argmax(np.abs(values)))
    return float(values[top]), float(abs(betas[k - 1] * vectors[k - 1, top]))


def spectrum(hessian_vector: Callable[[Vector], Vector], size: int, seed: int = 0,
             eigen_tolerance: float = EIGEN_TOLERANCE, sketch_min: int = SKETCH_MIN, sketch_max: int = SKETCH_MAX,
             trace_error: float = TRACE_ERROR, min_vectors: int = TRACE_MIN_VECTORS,
             max_products: int = MAX_PRODUCTS) -> Spectrum:
    """The top eigenvalue (largest magnitude) and the trace of the symmetric H that `hessian_vector` applies.

    Lanczos runs at least `sketch_min` steps and until the top Ritz value's error bound is under
    `eigen_tolerance` of it (PyHessian's tolerance, here on a bound rather than on a change between steps), at
    most `sketch_max`. The trace is tr(Q^T H Q) (exact) plus Hutchinson with Rademacher vectors projected off
    span(Q): at least `min_vectors`, then until its standard error is `trace_error` of the trace's magnitude,
    with `max_products` products in all; converged says which stopped it.
    """
    rng = np.random.default_rng(seed)
    start = rng.standard_normal(size)
    basis, alphas, betas = [start / np.linalg.norm(start)], [], []
    eigenvalue, bound, eigen_converged = 0.0, np.inf, False
    cap = min(sketch_max, size, max_products - min_vectors)
    while True:
        w = _lanczos_step(hessian_vector, basis, alphas, betas)
        eigenvalue, bound = _ritz(alphas, betas)
        # span(Q) holds H's range, to the float32 precision of a model's products: everything is exact
        invariant = betas[-1] <= INVARIANT * abs(eigenvalue)
        eigen_converged = invariant or bound <= eigen_tolerance * abs(eigenvalue)
        if invariant or len(alphas) >= cap or (eigen_converged and len(alphas) >= sketch_min):
            break
        basis.append(w / betas[-1])
    sketch = len(alphas)
    q = np.array(basis)
    sketched = float(np.sum(alphas))
    samples: list[float] = []
    trace_converged = invariant
    while not invariant and sketch + len(samples) < max_products:
        g = rng.choice((-1.0, 1.0), size)
        r = g - q.T @ (q @ g)
        samples.append(float(r @ hessian_vector(r)))
        if len(samples) >= min_vectors:
            if _stderr(samples) <= trace_error * abs(sketched + float(np.mean(samples))):
                trace_converged = True
                break
    rest = float(np.mean(samples)) if samples else 0.0
    stderr = 0.0 if invariant else _stderr(samples)
    return Spectrum(Estimate(eigenvalue, sketch, eigen_converged, bound),
                    Estimate(sketched + rest, len(samples), trace_converged, stderr),
                    sketch, sketch + len(samples))


def _stderr(samples: list[float]) -> float | None:
    return float(np.std(samples, ddof=1) / np.sqrt(len(samples))) if len(samples) > 1 else None


def load_solver_in_background() -> None:
    """Import SciPy's optimiser, which `sharpness` needs at the run's end, in a daemon thread now: its import
    (0.36 s on the 2-core CPU) then overlaps training, which leaves a core idle on MNIST-1D (one intra-op
    thread), instead of waiting at the end. A failure here is silent: `sharpness`'s own import raises it."""
    if "scipy.optimize" not in sys.modules:
        threading.Thread(target=_import_quietly, args=("scipy.optimize",), name="harness-import-scipy",
                         daemon=True).start()


def _import_quietly(module: str) -> None:
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - reported by the import that needs it
        pass


def sharpness(loss_and_gradient: Callable[[Vector], tuple[float, Vector]], weights: Vector, epsilon: float,
              iterations: int = SHARPNESS_ITERATIONS, tolerance: float = SHARPNESS_TOLERANCE,
              start: tuple[float, Vector] | None = None) -> Estimate:
    """Keskar et al.'s metric 2.1 in the full space: 100·(max f(w + y) − f(w))/(1 + f(w)) over the box
    |y_i| ≤ ε(|w_i| + 1), the maximum searched with L-BFGS-B from y = 0, for at most `iterations` iterations
    (the reference implementations' cap) and stopped earlier once an iteration raises the value by less than
    `tolerance` of it (or L-BFGS-B itself converges).

    The search is a lower bound of the true maximum, as in the paper; `loss_and_gradient` takes the full weight
    vector and may move the model's weights (the caller restores them); `start`, (f(w), ∇f(w)) when the caller
    has them: L-BFGS-B's first evaluation, at y = 0, is the search's start, computed once.
    """
    from harness.probes.lbfgsb import minimize_box  # SciPy's, loaded here: a run without probes never loads it

    base, gradient = start if start is not None else loss_and_gradient(weights)
    bound = epsilon * (np.abs(weights) + 1.0)
    scale = 100.0 / (1.0 + base)
    highest = [base]  # the largest loss evaluated: every point L-BFGS-B evaluates lies in the box
    reached = [0.0]   # the value after each iteration
    stopped = [False]

    def negative(y):
        if not np.any(y):  # the search's start, measured once
            return -base, -gradient
        loss, slope = loss_and_gradient(weights + y)
        highest[0] = max(highest[0], loss)
        return -loss, -slope

    def after_iteration(_):
        value = scale * (highest[0] - base)
        rise, reached[0] = value - reached[0], value
        if rise <= tolerance * value:
            stopped[0] = True
            raise StopIteration

    result = minimize_box(negative, np.zeros_like(weights), -bound, bound, iterations, callback=after_iteration)
    converged = stopped[0] or (result.status == 0 and result.nit < iterations)
    return Estimate(scale * (highest[0] - base), int(result.nit), converged)
