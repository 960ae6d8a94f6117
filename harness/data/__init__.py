"""Data sets: the registry of names, the built-in sets, the user's own files (npz, tables, image folders, TFDS),
the transforms a study applies to the arrays, and the tf.data pipelines a run reads them through.

May import: harness.fields, harness.backend (inside loaders and pipelines only); the registry imports without a
backend.
"""
