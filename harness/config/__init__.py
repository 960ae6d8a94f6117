"""The run's configuration: Hydra composes it (`compose`, the only module here that imports hydra or omegaconf),
`schema` validates it into a frozen RunConfig, `batching` derives every batch-size quantity from it.

May import: harness.data and harness.models (each parses its own config group), harness.fields, harness.store;
never TensorFlow, JAX or matplotlib.
"""
