"""The run's configuration: Hydra composes it (`compose`, with `hydra_internals` for Hydra's private API: the only
modules here that import hydra or omegaconf), `schema` validates it into a frozen RunConfig (`recipe`: the training
recipe's keys and their checks), `batching` derives every batch-size quantity from it, and `pairs` is the b-vs-B kit
the studies of a small batch against a large one plan with (their own plans live in harness/studies/).

May import: harness.data and harness.models (each parses its own config group), harness.fields, harness.store;
never TensorFlow, JAX or matplotlib.
"""
