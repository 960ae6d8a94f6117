"""Files in, numbers and sentences out: a sweep read once (`sweep`), the sweep as a frame, the verdicts, findings,
why, tuning, scaling, batch-norm and diagnosis readings, with their intervals, chosen by the study the sweep names.

May import: harness.store; never a backend, matplotlib, Jinja or Hydra.
"""
