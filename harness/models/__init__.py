"""Models: the registry of names, the built-in nets, the user's own models (`_target_`, `keras.applications`) and
the batch-norm layers.

May import: harness.fields, harness.backend (inside builders only); the registry imports without a backend.
"""
