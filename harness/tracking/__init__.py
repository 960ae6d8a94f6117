"""Experiment tracking: every run of a sweep also in MLflow (`tracking=mlflow`), logged live by the run as it trains
(live), checked against the runs' files at the sweep's end or afterwards by `python -m harness.track` (sync). The
files stay the record; the tracker is a view of them that never costs a result. Only mlflow_store imports MLflow,
and only when tracking is on.

May import: harness.store, harness.fields; never a backend, harness.run or harness.launch.
"""
