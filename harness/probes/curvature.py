"""How sharp is a minimum: the Hessian's top eigenvalue and trace, and Keskar et al.'s sharpness (metric 2.1).

Pure numpy and SciPy on callables over flat weight vectors, so each estimator is tested against closed-form
answers without a model; harness.probes.objective supplies the callables for a trained Keras model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

Vector = np.ndarray
EIGEN_TOLERANCE, EIGEN_MAX_ITERATIONS = 1e-3, 100  # PyHessian's defaults
TRACE_TOLERANCE, TRACE_MAX_VECTORS = 1e-2, 20  # PyHessian: 1e-3, 100 (~80 vectors, 4x the cost, here)
SHARPNESS_EPSILONS = (1e-3, 5e-4)  # Keskar et al. 2017
SHARPNESS_ITERATIONS = 10


@dataclass(frozen=True)
class Estimate:
    value: float
    iterations: int      # power iterations, or Hutchinson vectors
    converged: bool      # stopped by the tolerance, not by the cap
    stderr: float | None = None  # Hutchinson: the standard error of the mean over its vectors


def top_eigenvalue(hessian_vector: Callable[[Vector], Vector], size: int, seed: int = 0,
                   tolerance: float = EIGEN_TOLERANCE, max_iterations: int = EIGEN_MAX_ITERATIONS) -> Estimate:
    """The eigenvalue of largest magnitude, by power iteration from a seeded Gaussian vector; stops when the
    Rayleigh quotient changes by less than `tolerance` relative to its size (PyHessian's rule).

    The error shrinks like (λ₂/λ₁)^k: when the top two eigenvalues are close, the quotient creeps up slowly and
    the rule can stop short of λ₁ (a few percent low at λ₂/λ₁ ≈ 0.95); it is a lower bound."""
    v = np.random.default_rng(seed).standard_normal(size)
    v /= np.linalg.norm(v)
    eigenvalue = None
    for iteration in range(1, max_iterations + 1):
        hv = hessian_vector(v)
        estimate = float(v @ hv)
        norm = np.linalg.norm(hv)
        if norm == 0:
            return Estimate(0.0, iteration, True)
        v = hv / norm
        if eigenvalue is not None and abs(estimate - eigenvalue) <= tolerance * (abs(eigenvalue) + 1e-6):
            return Estimate(estimate, iteration, True)
        eigenvalue = estimate
    return Estimate(eigenvalue, max_iterations, False)


def hutchinson_trace(hessian_vector: Callable[[Vector], Vector], size: int, seed: int = 0,
                     tolerance: float = TRACE_TOLERANCE, max_vectors: int = TRACE_MAX_VECTORS) -> Estimate:
    """tr(H) = E[vᵀHv] over Rademacher vectors v; stops when the running mean changes by less than `tolerance`
    relative to its size."""
    rng = np.random.default_rng(seed)
    samples: list[float] = []
    mean = None
    for count in range(1, max_vectors + 1):
        v = rng.choice((-1.0, 1.0), size)
        samples.append(float(v @ hessian_vector(v)))
        new_mean = float(np.mean(samples))
        if mean is not None and abs(new_mean - mean) <= tolerance * (abs(mean) + 1e-6):
            return Estimate(new_mean, count, True, _stderr(samples))
        mean = new_mean
    return Estimate(mean, max_vectors, False, _stderr(samples))


def _stderr(samples: list[float]) -> float | None:
    return float(np.std(samples, ddof=1) / np.sqrt(len(samples))) if len(samples) > 1 else None


def sharpness(loss_and_gradient: Callable[[Vector], tuple[float, Vector]], weights: Vector, epsilon: float,
              iterations: int = SHARPNESS_ITERATIONS) -> float:
    """Keskar et al.'s metric 2.1 in the full space: 100·(max f(w + y) − f(w))/(1 + f(w)) over the box
    |y_i| ≤ ε(|w_i| + 1), the maximum searched with L-BFGS-B (`iterations` iterations) from y = 0.

    The search is a lower bound of the true maximum, as in the paper; `loss_and_gradient` takes the full weight
    vector and may move the model's weights (the caller restores them).
    """
    from scipy.optimize import fmin_l_bfgs_b  # here, not at the top: a run without probes never loads it (~0.5 s)

    base, _ = loss_and_gradient(weights)
    bound = epsilon * (np.abs(weights) + 1.0)

    def negative(y):
        loss, gradient = loss_and_gradient(weights + y)
        return -loss, -gradient

    _, negative_max, _ = fmin_l_bfgs_b(negative, np.zeros_like(weights), bounds=np.stack([-bound, bound], axis=1),
                                       maxiter=iterations)
    highest = max(-negative_max, base)
    return 100.0 * (highest - base) / (1.0 + base)
