"""L-BFGS-B in a box, as `scipy.optimize.minimize(method="L-BFGS-B")` runs it, without its set-up's Python loops.

SciPy's driver turns the bounds into the solver's arrays one coordinate at a time in Python (a loop over every
weight, and a conversion of `Bounds` to pairs and back), 0.15 s of every sharpness search of the built-in convnet's
52,170 weights on the 2-core CPU: 0.3 s of a run's 1.2 s of end-of-run probes. `minimize_box` calls the same solver
(SciPy's `_lbfgsb.setulb`, private) with the same arrays, built with numpy, and the same loop around it: the same
iterates, bit for bit (tests/probes/test_lbfgsb.py compares the two). That routine's signature is SciPy's own
business: it was read in SciPy WRITTEN_FOR; on a SciPy without it (before 1.15: the Fortran one) the search is
SciPy's public `minimize`, slower and the same.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

WRITTEN_FOR = "1.17"
MEMORY, FTOL, GTOL, MAX_LINE_SEARCH = 10, 2.2204460492503131e-09, 1e-5, 20  # minimize's L-BFGS-B defaults
NEW_X, FG = 1, 3  # the solver's task codes: an iteration ended; it wants f and g at x
CONVERGED, STOP, STOPPED_BY_CALLBACK, STOPPED_AT_MAXITER = 4, 5, 505, 504
CALLBACK_STATUS = 99  # minimize's status when the callback raised StopIteration


@dataclass(frozen=True)
class Result:
    x: np.ndarray
    fun: float
    nit: int
    status: int  # as minimize's: 0 converged, 1 the iteration limit, 99 the callback's StopIteration, 2 otherwise


def _solver():
    """SciPy's setulb when it has the signature this module was written for, else None."""
    import scipy

    major, minor = (int(part) for part in scipy.__version__.split(".")[:2])
    if (major, minor) < (1, 15):
        return None
    try:
        from scipy.optimize import _lbfgsb
    except ImportError:
        return None
    return getattr(_lbfgsb, "setulb", None)


def minimize_box(fun_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, lower: np.ndarray,
                 upper: np.ndarray, maxiter: int, callback: Callable[[np.ndarray], None] | None = None) -> Result:
    """Minimise f over lower <= x <= upper from x0 (both bounds finite), at most `maxiter` iterations; `callback(x)`
    after each, which stops the search by raising StopIteration."""
    setulb = _solver()
    if setulb is None:
        return _public(fun_and_grad, x0, lower, upper, maxiter, callback)
    n = len(x0)
    low, high = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
    x = np.clip(np.array(x0, dtype=np.float64), low, high)
    f, g = np.array(0.0), np.zeros(n)
    wa = np.zeros(2 * MEMORY * n + 5 * n + 11 * MEMORY * MEMORY + 8 * MEMORY)
    iwa, task, ln_task = np.zeros(3 * n, np.int32), np.zeros(2, np.int32), np.zeros(2, np.int32)
    lsave, isave, dsave = np.zeros(4, np.int32), np.zeros(44, np.int32), np.zeros(29)
    nbd = np.full(n, 2, np.int32)  # both bounds
    factr = FTOL / np.finfo(float).eps
    iterations, halted = 0, False
    while True:
        g = g.astype(np.float64)
        setulb(MEMORY, x, low, high, nbd, f, g, factr, GTOL, wa, iwa, task, lsave, isave, dsave, MAX_LINE_SEARCH,
               ln_task)
        if task[0] == FG:
            value, g = fun_and_grad(x.copy())
            f = np.array(value, dtype=np.float64)
        elif task[0] == NEW_X:
            iterations += 1
            if callback is not None:
                try:
                    callback(x.copy())
                except StopIteration:
                    task[0], task[1], halted = STOP, STOPPED_BY_CALLBACK, True
            if iterations >= maxiter:
                task[0], task[1] = STOP, STOPPED_AT_MAXITER
        else:
            break
    status = CALLBACK_STATUS if halted else 0 if task[0] == CONVERGED else 1 if iterations >= maxiter else 2
    return Result(x, float(f), iterations, status)


def _public(fun_and_grad, x0, lower, upper, maxiter, callback) -> Result:
    from scipy.optimize import Bounds, minimize

    result = minimize(fun_and_grad, x0, jac=True, method="L-BFGS-B", callback=callback,
                      bounds=Bounds(lower, upper), options={"maxiter": maxiter})
    return Result(result.x, float(result.fun), int(result.nit), int(result.status))
