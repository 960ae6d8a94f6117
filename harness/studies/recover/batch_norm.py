"""+study=recover and the model's batch norm, as the plan sees it before round 1: whether the command's model has
batch-norm layers (any model: harness.models.batch_norm builds a user's once, in a process of its own), b's momentum
rho_b that the EMA rule scales (harness.config.rules) and the search's `bn_momentum` range tops, whether ghost batch norm in
chunks of b applies (a built-in model whose batch norm is not synchronized), and what the space leaves out and why.
Pure but for that one short process: configs in, facts out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.config.pairs import ghost_chunk
from harness.config import batch_norm as command_batch_norm
from harness.config.rules import NO_BATCH_NORM, UNKNOWN
from harness.config.schema import RunConfig
from harness.models import batch_norm as model_batch_norm
from harness.studies.recover.space import BATCH_NORM_KEYS




@dataclass(frozen=True)
class Norms:
    found: model_batch_norm.BatchNorm | None  # the model's layers (None: not known before the data are loaded)
    ghost: int | None                          # b's per-device batch, the ghost chunk; None where it does not apply
    left_out: dict[str, str] = field(default_factory=dict)  # space key -> what it applies to

    @property
    def rho(self) -> float | None:
        """b's batch-norm momentum: the command's model.bn_momentum (every layer has it), else the layers' largest;
        None without batch norm."""
        return None if self.found is None else self.found.largest

    def record(self, large: RunConfig) -> dict[str, Any] | None:
        """sweep.json's `recover.batch_norm`: the layers, their momenta, rho_b and whether the command gave it."""
        if self.found is None:
            return None
        return {**self.found.as_json(), "rho": self.rho, "given": large.model.bn_momentum is not None}


def of_command(small: RunConfig, large: RunConfig, space: dict[str, list], rules: bool) -> Norms:
    """The batch norm of the command's model at b and B (the model is found where the space or the rules need it)."""
    (ghost, no_ghost), left_out = ghost_chunk(large, small), {}
    found = command_batch_norm.find(large) if rules or any(key in space for key in BATCH_NORM_KEYS) else None
    for key in ("bn_momentum", "precise_bn"):
        if (found is None or found.largest is None) and key in space:
            left_out[key] = NO_BATCH_NORM if found is not None else UNKNOWN
    if ghost is None and "ghost_batch_size" in space:
        left_out["ghost_batch_size"] = ("a built-in model with batch norm that is not synchronized (the harness's "
                                        f"ghost batch-norm layer): here {no_ghost}")
    return Norms(found, ghost, left_out)
