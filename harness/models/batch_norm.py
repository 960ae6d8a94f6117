"""A model's batch-norm layers and their momenta, known before it trains (what +study=recover's EMA rule and search
need: harness.config.rules), or read off a model a run has built (run.json's `batch_norm`).

- A built-in model says it in its config: `model.batch_norm` and Keras's default momentum (or `model.bn_momentum`).
- Any other model (`model=application`, `model=custom`) is built once, in a short process of its own on the
  command's backend (`python -m harness.models.batch_norm`, on the CPU), so that the planner itself loads no backend.
  Its layers are counted as a run counts them (harness.models.layers.batch_norm_layers: trainable
  BatchNormalization layers, ghost ones and those of nested models included).
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.fields import ConfigError

KERAS_MOMENTUM = 0.99  # keras.layers.BatchNormalization's default (tests/models/test_batch_norm.py checks it on Keras)
BUILTIN_LAYERS = {"convnet": 3, "mlp": 2}  # the built-in models' batch-norm layers with model.batch_norm=true


@dataclass(frozen=True)
class BatchNorm:
    """A model's trainable batch-norm layers: how many, and each one's momentum as the run will train it."""

    layers: int
    momenta: tuple[float, ...]

    @property
    def largest(self) -> float | None:
        """The largest momentum: the layer whose moving statistics lag the most (None: no batch norm)."""
        return max(self.momenta) if self.momenta else None

    def as_json(self) -> dict:
        return {"layers": self.layers, "momenta": sorted(set(self.momenta))}


NONE = BatchNorm(0, ())


def of_model(model) -> BatchNorm:
    """A built model's batch-norm layers (in a process that has Keras loaded)."""
    from harness.models.layers import batch_norm_layers

    layers = batch_norm_layers(model)
    return BatchNorm(len(layers), tuple(float(layer.momentum) for layer in layers))


def of_config(model_cfg) -> BatchNorm | None:
    """A built-in model's batch norm from its config; None for a model that must be built to know."""
    from harness.models.registry import BUILTIN

    if model_cfg.source not in BUILTIN:
        return None
    if not model_cfg.batch_norm:
        return NONE
    momentum = KERAS_MOMENTUM if model_cfg.bn_momentum is None else model_cfg.bn_momentum
    count = BUILTIN_LAYERS[model_cfg.source]
    return BatchNorm(count, (momentum,) * count)


def find(model_cfg, input_shape: tuple[int, ...] | None, num_classes: int | None, backend: str) -> BatchNorm | None:
    """The batch norm of the model `model_cfg` builds for this data: from its config, or built in a process of its
    own; None where the data's shape is known only once loaded (a TFDS set not prepared yet). A model that fails to
    build raises ConfigError naming its key (the run would fail the same way)."""
    known = of_config(model_cfg)
    if known is not None:
        return known
    if input_shape is None or num_classes is None:
        return None
    request = {"model": dataclasses.asdict(model_cfg), "input_shape": list(input_shape), "num_classes": num_classes,
               "backend": backend}
    # the CPU only: building needs no accelerator, and a GPU's memory is the runs'; this process's path, where the
    # user's module was found (the working directory, for `python -m harness`)
    path = os.pathsep.join([*(entry or os.getcwd() for entry in sys.path), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3",
           "PYTHONPATH": path}
    with tempfile.TemporaryDirectory() as folder:
        answer = Path(folder) / "batch_norm.json"
        proc = subprocess.run([sys.executable, "-m", __name__, str(answer)], input=json.dumps(request), env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0 or not answer.exists():
            key, value = ("model._target_", model_cfg.target) if model_cfg.source == "custom" else (
                "model.name", model_cfg.name)
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise ConfigError(key, value, f"a model that builds for inputs of shape {tuple(input_shape)} and "
                              f"{num_classes} classes (built to find its batch-norm layers: {last})")
        found = json.loads(answer.read_text())
    return BatchNorm(int(found["layers"]), tuple(float(m) for m in found["momenta"]))


def _build_and_answer(request: dict, answer: Path) -> None:
    from harness import backend
    from harness.models.registry import ModelConfig, build

    backend.select(request["backend"], cpu_only=True)
    fields = dict(request["model"])
    fields["options"] = tuple((key, value) for key, value in fields["options"])
    model = build(ModelConfig(**fields), tuple(request["input_shape"]), int(request["num_classes"]))
    found = of_model(model)
    answer.write_text(json.dumps({"layers": found.layers, "momenta": list(found.momenta)}))


if __name__ == "__main__":
    _build_and_answer(json.load(sys.stdin), Path(sys.argv[1]))
