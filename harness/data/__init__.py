"""Data sets: the registry of names, the built-in sets, the user's own files (npz, tables, image folders, TFDS),
the transforms a study applies to the arrays, and the pipelines a run reads them through (tf.data on TensorFlow,
numpy batches on JAX).

May import: harness.fields, harness.backend (inside loaders and pipelines only); the registry imports without a
backend.
"""
