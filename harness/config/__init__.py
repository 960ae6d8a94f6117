"""The run's configuration: Hydra composes it (`compose`, with `hydra_internals` for Hydra's private API: the only
modules here that import hydra or omegaconf), `schema` validates it into a frozen RunConfig, `batching` derives
every batch-size quantity from it, `diagnosis` plans +study=diagnose's arms from the command.

May import: harness.data and harness.models (each parses its own config group), harness.fields, harness.store;
never TensorFlow, JAX or matplotlib.
"""
