"""The batch norm of a command's model, known before its first run: a built-in model's from its config, a user's
model built once in a short process of its own (harness.models.batch_norm). What a study's plan reads it for: the
EMA rule's rho_b (harness.config.rules) and which batch-norm keys apply."""
from __future__ import annotations

from harness.config.schema import RunConfig
from harness.data import registry as datasets
from harness.models import batch_norm as model_batch_norm


def find(cfg: RunConfig) -> model_batch_norm.BatchNorm | None:
    """The batch-norm layers of `cfg`'s model, or None where the data's shape is known only once loaded."""
    counts = datasets.train_class_counts(cfg.data)
    return model_batch_norm.find(cfg.model, datasets.input_shape(cfg.data),
                                 None if counts is None else len(counts), cfg.device.backend)
