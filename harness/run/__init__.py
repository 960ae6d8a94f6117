"""One training process: devices and distribution, inputs, compile and fit, what each epoch measures, checkpoints,
TensorBoard, the recomputed batch-norm statistics, a diagnosis's data checks, and the sweep's interpolation job.

May import: harness.tracking, harness.probes, harness.config, harness.data, harness.models, harness.store,
harness.backend.
"""
