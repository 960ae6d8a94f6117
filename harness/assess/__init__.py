"""Files in, numbers and sentences out: the sweep as a frame, the verdicts, findings, why, tuning and batch-norm
readings, with their intervals.

May import: harness.store; never a backend, matplotlib, Jinja or Hydra.
"""
