"""Data sets: the registry of names, the built-in sets, the user's own files (npz, tables, image folders, TFDS),
what any data must be (`validity`), the transforms a study applies to the arrays, the pipelines a run reads them
through (tf.data on TensorFlow, numpy batches on JAX, image files decoded by `decode`). A diagnosis's checks of the
data for the other suspects live with their study (harness.studies.diagnose.data_checks).

May import: harness.fields, harness.backend (inside loaders and pipelines only); the registry imports without a
backend.
"""
