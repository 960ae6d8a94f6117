"""Files in, numbers and sentences out: a sweep read once (`sweep`), the sweep as a frame (`analysis`), the
batch-size verdicts, the other suspects' findings, what was measured beside the drop (`why`), the batch-norm
reading, and what a study's own reading builds on (`assessment.common`, `paired`, `intervals`); the studies'
readings live in their folders (harness/studies/<name>/reading.py).

May import: harness.store; never a backend, matplotlib, Jinja or Hydra.
"""
