"""The box L-BFGS-B the sharpness search runs (harness.probes.lbfgsb) against SciPy's own minimize: the same
iterates bit for bit, stopped the same ways, and the public path where SciPy's private solver is missing."""
import numpy as np
import pytest
import scipy
from scipy.optimize import Bounds, minimize

from harness.probes import curvature, lbfgsb


def _problem(n=500, seed=0):
    """A smooth non-quadratic function of n variables, its gradient, and a box that binds some of them."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)

    def fun_and_grad(x):
        r = a @ x - b
        return float(np.sum(np.log1p(r * r))), a.T @ (2 * r / (1 + r * r))

    bound = 0.05 * (np.abs(rng.standard_normal(n)) + 1.0)
    return fun_and_grad, -bound, bound


def _scipy(fun_and_grad, low, high, maxiter, callback=None):
    return minimize(fun_and_grad, np.zeros(len(low)), jac=True, method="L-BFGS-B", callback=callback,
                    bounds=Bounds(low, high), options={"maxiter": maxiter})


@pytest.mark.parametrize("maxiter", [3, 10, 200])
def test_the_same_iterates_as_scipys_minimize(maxiter):
    fun_and_grad, low, high = _problem()
    seen, theirs = [], []
    ours = lbfgsb.minimize_box(fun_and_grad, np.zeros(len(low)), low, high, maxiter, callback=seen.append)
    reference = _scipy(fun_and_grad, low, high, maxiter, callback=theirs.append)
    assert lbfgsb._solver() is not None  # the fast path was measured, not SciPy's
    assert np.array_equal(ours.x, reference.x) and ours.fun == reference.fun
    assert (ours.nit, ours.status) == (reference.nit, reference.status)
    assert len(seen) == len(theirs) and all(np.array_equal(s, t) for s, t in zip(seen, theirs))
    assert np.all(ours.x >= low) and np.all(ours.x <= high)


def test_a_callback_that_raises_stop_iteration_stops_both_at_the_same_point():
    fun_and_grad, low, high = _problem(seed=1)

    def stop_at_three():
        count = [0]

        def callback(_):
            count[0] += 1
            if count[0] == 3:
                raise StopIteration
        return callback

    ours = lbfgsb.minimize_box(fun_and_grad, np.zeros(len(low)), low, high, 10, callback=stop_at_three())
    reference = _scipy(fun_and_grad, low, high, 10, callback=stop_at_three())
    assert ours.nit == reference.nit == 3 and ours.status == reference.status == lbfgsb.CALLBACK_STATUS
    assert np.array_equal(ours.x, reference.x)


def test_without_scipys_private_solver_the_search_is_scipys_public_one(monkeypatch):
    fun_and_grad, low, high = _problem(seed=2)
    fast = curvature.sharpness(fun_and_grad, np.ones(len(low)), 1e-3)
    monkeypatch.setattr(lbfgsb, "_solver", lambda: None)
    public = curvature.sharpness(fun_and_grad, np.ones(len(low)), 1e-3)
    assert fast == public


def test_the_solver_was_read_in_the_installed_scipys_minor_version():
    """setulb's signature is SciPy's private business: read again (and WRITTEN_FOR moved) when SciPy moves."""
    assert scipy.__version__.startswith(lbfgsb.WRITTEN_FOR + ".") or scipy.__version__ == lbfgsb.WRITTEN_FOR
