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


def _with_spectrum(eigenvalues: np.ndarray, seed: int = 0) -> np.ndarray:
    """A symmetric matrix with exactly these eigenvalues, in a random orthonormal basis."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(eigenvalues), len(eigenvalues))))
    return (q * eigenvalues) @ q.T


N = 600
SPECTRA = {  # name -> eigenvalues with a closed-form trace and top eigenvalue
    "decaying": 100.0 * 0.8 ** np.arange(N),                     # a few directions dominate
    "power law": 50.0 / np.arange(1, N + 1),                    # slow decay: a heavy tail for Hutchinson
    "outliers and an indefinite bulk": np.concatenate([[60.0, 40.0, 30.0, 25.0, 20.0, 15.0, 12.0, 10.0, 8.0],
                                                       np.linspace(-0.1, 0.12, N - 9)]),  # a network's, roughly
    "flat": np.linspace(1.0, 2.0, N),                            # no gap at the top: Lanczos needs more steps
}


@pytest.mark.parametrize("name", sorted(SPECTRA))
def test_the_sketch_finds_the_top_eigenvalue_and_the_trace_with_a_true_standard_error(name):
    eigenvalues = SPECTRA[name]
    hessian = _with_spectrum(eigenvalues)
    top, trace = eigenvalues[np.argmax(np.abs(eigenvalues))], eigenvalues.sum()
    errors = []
    for seed in range(20):
        found = curvature.spectrum(lambda v: hessian @ v, N, seed=seed)
        # converged: within the tolerance and the error bound; only the flat spectrum (no gap at the top) may stop
        # at the cap, a little less precise and saying so
        assert found.eigenvalue.converged or name == "flat"
        if found.eigenvalue.converged:
            assert found.eigenvalue.value == pytest.approx(top, rel=curvature.EIGEN_TOLERANCE)
            assert abs(found.eigenvalue.value - top) <= found.eigenvalue.stderr + 1e-9 * top
        assert found.eigenvalue.value == pytest.approx(top, rel=1e-2)
        assert found.trace.converged and found.trace.stderr <= curvature.TRACE_ERROR * abs(found.trace.value)
        assert found.products == found.sketch + found.trace.iterations <= curvature.MAX_PRODUCTS
        errors.append((found.trace.value - trace) / found.trace.stderr)
    # the stated standard error is the real one: in its units the errors fall as a t distribution's with 7
    # degrees of freedom would (95% of them within 2.36), allowing for the sample
    assert np.mean(np.abs(errors) < 3) >= 0.85 and np.max(np.abs(errors)) < 6, np.round(errors, 1)


def test_the_sketch_beats_plain_hutchinson_where_a_few_eigenvalues_dominate():
    """Plain Hutchinson (no sketch) needs many more products for the same standard error on a decaying spectrum."""
    hessian = _with_spectrum(SPECTRA["decaying"])
    found = curvature.spectrum(lambda v: hessian @ v, N, seed=0)
    plain = curvature.spectrum(lambda v: hessian @ v, N, seed=0, sketch_min=1, sketch_max=1, max_products=1000)
    assert found.products < 30 and plain.products > 3 * found.products


def test_an_exact_sketch_has_no_error_and_a_capped_one_says_it_did_not_converge():
    diagonal = np.diag(np.arange(1.0, 11.0))  # Lanczos spans the whole 10-dimensional space: everything exact
    found = curvature.spectrum(lambda v: diagonal @ v, 10)
    assert found.trace.value == pytest.approx(55.0) and found.trace.stderr == 0.0 and found.trace.converged
    assert found.eigenvalue.value == pytest.approx(10.0) and found.eigenvalue.converged
    near = np.diag(np.concatenate([[1.0, 0.9999999], np.linspace(-1, 1, 398)]))  # two top eigenvalues 1e-7 apart
    capped = curvature.spectrum(lambda v: near @ v, 400, sketch_max=5, max_products=20, eigen_tolerance=1e-12)
    assert not capped.eigenvalue.converged and capped.eigenvalue.iterations == 5
    assert not capped.trace.converged and capped.products == 20  # a trace near 0: 5% of it is out of reach
    assert abs(capped.trace.value) < 1.96 * capped.trace.stderr + 3  # and its interval is stated, spanning 0


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
    found = curvature.sharpness(loss_and_gradient, w, epsilon)
    assert found.value == pytest.approx(expected, rel=1e-6)
    assert found.converged and found.iterations < curvature.SHARPNESS_ITERATIONS  # stopped once at the corner
    assert curvature.sharpness(loss_and_gradient, w, epsilon / 2).value < expected  # a smaller box, a smaller rise


def test_the_sharpness_search_evaluates_its_start_once():
    """L-BFGS-B's first evaluation is at y = 0, where the search has measured f(w) and ∇f(w) already (or the
    caller has: `start`): the same search, with w evaluated once, or not at all when the caller gives it."""
    rng = np.random.default_rng(5)
    a, b, w = rng.uniform(1, 50, 40), rng.standard_normal(40), rng.standard_normal(40)
    points = []

    def loss_and_gradient(x):
        points.append(x.copy())
        return float(np.sum(0.5 * a * x ** 2 + b * x)), a * x + b

    found = curvature.sharpness(loss_and_gradient, w, 1e-3)
    assert sum(np.array_equal(p, w) for p in points) == 1 and len(points) >= 2
    evaluated, start = len(points), loss_and_gradient(w)
    points.clear()
    assert curvature.sharpness(loss_and_gradient, w, 1e-3, start=start) == found
    assert len(points) == evaluated - 1 and not any(np.array_equal(p, w) for p in points)


def test_sharpness_stops_at_its_cap_when_the_search_keeps_rising():
    """A loss whose box maximum L-BFGS-B approaches slowly: the cap stops it, recorded as not converged."""
    rng = np.random.default_rng(3)
    a = rng.uniform(0.1, 100, 200)

    def loss_and_gradient(x):  # a concave bowl far wider than the box: the maximum sits at its centre
        centre = 0.004
        return float(-np.sum(a * (x - centre) ** 2)), -2 * a * (x - centre)

    found = curvature.sharpness(loss_and_gradient, np.zeros(200), 1e-2, iterations=3, tolerance=0.0)
    assert found.iterations == 3 and not found.converged and found.value > 0
