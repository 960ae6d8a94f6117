"""Measurements of the loss surface and the gradient noise: the estimators (numpy and SciPy on callables), the
objective they measure (the one backend-specific piece), the in-run probes and the pairs of runs the
interpolation joins.

May import: harness.store, harness.data (batches), harness.backend; never harness.run or harness.launch.
"""
