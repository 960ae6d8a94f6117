"""The user's own model: any `keras.applications` class (`model=application model.name=VGG19`), or a function
of theirs named Hydra's way (`model=custom model._target_=package.module.function`).

Checks run before anything trains: an application's name and the input it needs are read from the installed
Keras's own files (which classes `keras.applications` exports, and each one's `min_size`), so validation loads
no TensorFlow; a custom target is imported (the working directory is on the path, as for any `python -m`).
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import re
from pathlib import Path
from typing import Any

from harness.fields import ConfigError

DEFAULT_MIN_SIZE = 32  # keras.applications' smallest image side when a module states none


@functools.lru_cache(maxsize=1)
def applications() -> dict[str, int]:
    """keras.applications class name -> the smallest image side it accepts (weights=None, include_top=True)."""
    spec = importlib.util.find_spec("keras")
    root = Path(spec.origin).parent
    exported = re.findall(r"from keras\.src\.applications\.(\w+) import \(?\s*(\w+) as \w+",
                          (root / "applications" / "__init__.py").read_text())
    sizes = {}
    for module, name in exported:
        source = root / "src" / "applications" / f"{module}.py"
        found = re.search(r"min_size=(\d+)", source.read_text()) if source.exists() else None
        sizes[name] = int(found.group(1)) if found else DEFAULT_MIN_SIZE
    return sizes


def check_application(name: Any, input_shape: tuple[int, ...] | None) -> None:
    """The class exists and takes images of `input_shape` (height, width, channels); raises ConfigError."""
    known = applications()
    if name not in known:
        raise ConfigError("model.name", name, f"a class of keras.applications ({', '.join(sorted(known))})")
    if input_shape is None:  # the data's shape is known only once loaded (TFDS): Keras checks it at the run
        return
    size = known[name]
    if len(input_shape) != 3 or min(input_shape[:2]) < size:
        raise ConfigError("model.name", name, f"a model that takes the data's input shape {tuple(input_shape)}: "
                          f"{name} needs images of at least {size}x{size} pixels (height, width, channels); use "
                          f"dataset.image_size=[{size},{size}] or larger, or another model")


def build_application(name: str, input_shape: tuple[int, ...], num_classes: int, options: dict[str, Any]):
    from harness.backend import keras

    return getattr(keras.applications, name)(weights=None, input_shape=tuple(input_shape), classes=num_classes,
                                             **options)


def _import_target(target: str):
    module_name, _, attribute = target.rpartition(".")
    if not module_name:
        raise ValueError("a dotted path module.function is needed")
    module = importlib.import_module(module_name)
    if not hasattr(module, attribute):
        raise ValueError(f"module {module_name} has no attribute {attribute}")
    function = getattr(module, attribute)
    if not callable(function):
        raise ValueError(f"{attribute} is not callable")
    return function


def check_target(target: Any) -> None:
    """`model._target_` names an importable callable; raises ConfigError naming the reason."""
    if not isinstance(target, str) or not target:
        raise ConfigError("model._target_", target, "package.module.function, a function that returns an "
                          "uncompiled keras.Model (called with input_shape=..., num_classes=...)")
    try:
        _import_target(target)
    except Exception as err:  # an ImportError, or anything the user's module raises while importing
        raise ConfigError("model._target_", target, f"an importable function (module.function, the module on the "
                          f"path where the command runs): {type(err).__name__}: {err}") from None


def build_custom(target: str, input_shape: tuple[int, ...], num_classes: int, options: dict[str, Any]):
    """The user's model: `target` ("module.function", importable from the working directory) called as
    `function(input_shape=..., num_classes=..., **options)`, `options` being every other `model.*` key."""
    return _import_target(target)(input_shape=tuple(input_shape), num_classes=num_classes, **options)


def check_outputs(model, model_cfg, num_classes: int) -> None:
    """The model returns one probability per class; anything else is a clear error at the start of the run."""
    from harness.backend import keras

    key, value = ("model._target_", model_cfg.target) if model_cfg.source == "custom" else ("model.name",
                                                                                          model_cfg.name)
    if not isinstance(model, keras.Model):
        raise ValueError(f"{key}={value!r} returned {type(model).__name__}, not a keras.Model")
    shape = tuple(model.outputs[0].shape) if len(model.outputs) == 1 else None
    if shape is None or len(shape) != 2 or shape[-1] != num_classes:
        raise ValueError(f"{key}={value!r} built a model whose output has shape {shape}; the data has "
                         f"{num_classes} classes, so it must end in a Dense({num_classes}, activation='softmax') "
                         "layer: one probability per class")
