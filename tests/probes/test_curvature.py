"""The curvature estimators against answers computed independently, in closed form or by numpy."""
import numpy as np
import pytest

from harness.probes import curvature


def _least_squares_hessian(seed: int = 0, n: int = 200, d: int = 30) -> np.ndarray:
    """½‖Xw − y‖²/n has the Hessian XᵀX/n exactly, whatever w and y. A few input directions dominate, so the
    top eigenvalue stands apart from the rest, as in trained networks' Hessians."""
    scales = np.concatenate([[4.0, 2.5, 2.0], np.linspace(0.2, 1.5, d - 3)])
    x = np.random.default_rng(seed).standard_normal((n, d)) * scales
    return x.T @ x / n


def test_power_iteration_finds_the_top_eigenvalue_of_a_linear_least_squares_hessian():
    hessian = _least_squares_hessian()
    found = curvature.top_eigenvalue(lambda v: hessian @ v, len(hessian))
    assert found.converged and found.iterations < curvature.EIGEN_MAX_ITERATIONS
    assert found.value == pytest.approx(np.linalg.eigvalsh(hessian)[-1], rel=5e-3)


def test_power_iteration_stops_at_the_cap_and_says_it_did_not_converge():
    hessian = np.diag([1.0, 0.999999, 0.5])  # two nearly equal top eigenvalues: slow to separate
    found = curvature.top_eigenvalue(lambda v: hessian @ v, 3, tolerance=0.0, max_iterations=7)
    assert found.iterations == 7 and not found.converged


def test_hutchinson_trace_matches_numpy_trace():
    hessian = _least_squares_hessian(seed=1)
    found = curvature.hutchinson_trace(lambda v: hessian @ v, len(hessian), tolerance=1e-4, max_vectors=2000)
    assert found.value == pytest.approx(np.trace(hessian), rel=0.05)
    diagonal = np.diag(np.arange(1.0, 11.0))  # Rademacher vectors: vᵀDv = tr(D) exactly for a diagonal matrix
    assert curvature.hutchinson_trace(lambda v: diagonal @ v, 10).value == pytest.approx(55.0)


def test_sharpness_finds_the_box_maximum_of_a_separable_quadratic():
    """f(w) = Σ ½aᵢwᵢ² + bᵢwᵢ (aᵢ > 0): over a box the maximum sits at the end of each interval that lies
    farther from the coordinate's vertex −bᵢ/aᵢ, which is the end the gradient points to."""
    rng = np.random.default_rng(2)
    a, b, w = rng.uniform(1, 50, 40), rng.standard_normal(40), rng.standard_normal(40)

    def f(x):
        return float(np.sum(0.5 * a * x ** 2 + b * x))

    def loss_and_gradient(x):
        return f(x), a * x + b

    epsilon = 1e-3
    bound = epsilon * (np.abs(w) + 1)
    highest = f(w + np.sign(a * w + b) * bound)
    expected = 100 * (highest - f(w)) / (1 + f(w))
    assert curvature.sharpness(loss_and_gradient, w, epsilon) == pytest.approx(expected, rel=1e-6)
    assert curvature.sharpness(loss_and_gradient, w, epsilon / 2) < expected  # a smaller box, a smaller rise
