"""Models by name: a dict registry of builders. Keras is loaded (through harness.backend) inside the builders,
so config validation can read the names without loading TensorFlow."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from harness.fields import ConfigError, RegistryEntry, bool_value, check_keys, float_value
from harness.models import user_models


def _units(base: int, width: float) -> int:
    return max(1, int(round(base * width)))


def _block(x, layer, batch_norm: bool, sync: bool = False, ghost_batch_size: int | None = None):
    """layer -> [batch norm] -> relu; the layer has no bias when batch norm follows it.

    Under data parallelism each replica normalises over its own slice of the batch, as Keras does by default;
    `sync` makes it use the statistics of the whole global batch (cross-replica all-reduce). `ghost_batch_size`
    normalises each chunk of that many samples on its own (ghost batch norm, Hoffer et al. 2017), so a large
    batch sees the statistics of a small one.
    """
    from harness.backend import keras

    x = layer(x)
    if batch_norm and ghost_batch_size:
        from harness.models.layers import GhostBatchNormalization

        x = GhostBatchNormalization(ghost_batch_size)(x)
    elif batch_norm:
        x = keras.layers.BatchNormalization(synchronized=sync)(x)
    return keras.layers.Activation("relu")(x)


def convnet(input_shape: tuple[int, ...], num_classes: int, width: float, batch_norm: bool, sync: bool = False,
            ghost_batch_size: int | None = None):
    """conv32-pool-conv64-pool-dense64-softmax; Conv1D for (length, channels) inputs, Conv2D for images."""
    from harness.backend import keras

    layers = keras.layers

    two_d = len(input_shape) == 3
    conv = (lambda f: layers.Conv2D(f, 3, padding="same", use_bias=not batch_norm)) if two_d else (
        lambda f: layers.Conv1D(f, 5, padding="same", use_bias=not batch_norm)
    )
    pool = layers.MaxPooling2D if two_d else layers.MaxPooling1D
    inputs = keras.Input(shape=input_shape)
    norm = {"batch_norm": batch_norm, "sync": sync, "ghost_batch_size": ghost_batch_size}
    x = pool(2)(_block(inputs, conv(_units(32, width)), **norm))
    x = pool(2)(_block(x, conv(_units(64, width)), **norm))
    x = layers.Flatten()(x)
    x = _block(x, layers.Dense(_units(64, width), use_bias=not batch_norm), **norm)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="convnet")


def mlp(input_shape: tuple[int, ...], num_classes: int, width: float, batch_norm: bool, sync: bool = False,
        ghost_batch_size: int | None = None):
    """Two hidden dense layers of 128 x width units."""
    from harness.backend import keras

    layers = keras.layers

    norm = {"batch_norm": batch_norm, "sync": sync, "ghost_batch_size": ghost_batch_size}
    inputs = keras.Input(shape=input_shape)
    x = layers.Flatten()(inputs)
    for _ in range(2):
        x = _block(x, layers.Dense(_units(128, width), use_bias=not batch_norm), **norm)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="mlp")


@dataclass(frozen=True)
class ModelConfig(RegistryEntry):
    name: str                     # model=<name>; for model=application, the keras.applications class
    width: float = 1.0
    batch_norm: bool = False
    sync_batchnorm: bool = False  # batch statistics over all replicas instead of each replica's slice
    ghost_batch_size: int | None = None  # ghost batch norm: statistics of each chunk of this many samples
    bn_momentum: float | None = None  # every BatchNormalization layer's momentum, set after building (None: its own)
    source: str | None = None     # the registry entry that builds it (None: `name`)
    target: str | None = None     # model=custom: `_target_`, the function that builds it
    options: tuple[tuple[str, Any], ...] = ()  # model=application|custom: every other model.* key, as keywords

    def flat(self) -> dict[str, Any]:
        """`model` and the `model.*` keys, by their command-line key."""
        flat = self.flat_name("model")
        if self.source in BUILTIN:
            flat.update({f"model.{k}": getattr(self, k) for k in BUILTIN_KEYS})
        flat["model.bn_momentum"] = self.bn_momentum
        if self.target is not None:
            flat["model._target_"] = self.target
        flat.update({f"model.{k}": v for k, v in self.options})
        return flat


BUILTIN: dict[str, Callable] = {"convnet": convnet, "mlp": mlp}
BUILTIN_KEYS = ("width", "batch_norm", "sync_batchnorm", "ghost_batch_size")
MODEL_NAMES = (*BUILTIN, "application", "custom")
ALL_KEYS = {"name", "source", "_target_", "bn_momentum", *BUILTIN_KEYS}


def config_from_dict(cfg: Any, input_shape: tuple[int, ...] | None, num_classes: int | None) -> ModelConfig:
    """The `model` group of a composed config, validated against the data it will train on; raises ConfigError."""
    source = cfg.get("source", cfg.get("name")) if isinstance(cfg, dict) else cfg
    if not isinstance(source, str) or source not in MODEL_NAMES:
        raise ConfigError("model", source, f"one of {', '.join(MODEL_NAMES)}")
    momentum = _bn_momentum(cfg)
    if source in BUILTIN:
        check_keys(cfg, {"name", *(["source"] if "source" in cfg else []), "bn_momentum", *BUILTIN_KEYS}, "model.")
        width = float_value(cfg, "width", name="model.width")
        if width <= 0:
            raise ConfigError("model.width", width, "a number > 0")
        batch_norm = bool_value(cfg, "batch_norm", "model.batch_norm")
        sync = bool_value(cfg, "sync_batchnorm", "model.sync_batchnorm")
        if momentum is not None and not batch_norm:
            raise ConfigError("model.bn_momentum", momentum, "null unless model.batch_norm=true (the model has no "
                              "batch normalization)")
        return ModelConfig(name=cfg["name"], width=width, batch_norm=batch_norm, sync_batchnorm=sync,
                           ghost_batch_size=_ghost_batch_size(cfg, batch_norm, sync), bn_momentum=momentum,
                           source=source)
    options = tuple(sorted((k, v) for k, v in cfg.items() if k not in ("name", "source", "_target_", "bn_momentum")))
    if source == "application":
        user_models.check_application(cfg.get("name"), input_shape)
        return ModelConfig(name=cfg["name"], source=source, bn_momentum=momentum, options=options)
    target = cfg.get("_target_")
    user_models.check_target(target)
    return ModelConfig(name=cfg["name"], source=source, target=target, bn_momentum=momentum, options=options)


def _bn_momentum(cfg: dict) -> float | None:
    """model.bn_momentum: null (each layer keeps its own), or a momentum in (0, 1) for every batch-norm layer."""
    value = cfg.get("bn_momentum")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise ConfigError("model.bn_momentum", value, "null (each batch-norm layer keeps its own momentum) or a "
                          "number in (0, 1), e.g. 0.9")
    return float(value)


def _ghost_batch_size(cfg: dict, batch_norm: bool, sync: bool) -> int | None:
    """model.ghost_batch_size: null, or chunks of >= 2 samples (a chunk of one normalises every value to 0) of a
    batch norm that is not synchronized (that one normalises the global batch, the opposite of chunking it)."""
    ghost = cfg.get("ghost_batch_size")
    if ghost is None:
        return None
    if isinstance(ghost, bool) or not isinstance(ghost, int) or ghost < 2:
        raise ConfigError("model.ghost_batch_size", ghost, "null or an integer >= 2")
    if not batch_norm:
        raise ConfigError("model.ghost_batch_size", ghost, "null unless model.batch_norm=true")
    if sync:
        raise ConfigError("model.ghost_batch_size", ghost, "null when model.sync_batchnorm=true")
    return ghost


def build(model_cfg: ModelConfig, input_shape: tuple[int, ...], num_classes: int):
    """Build (not compile) the model `model_cfg` describes for inputs of `input_shape`; call inside the
    strategy's scope. A user's model must end in `num_classes` outputs. `model.bn_momentum` is set on every
    batch-norm layer once the model is built, never passed to a constructor."""
    if model_cfg.source in BUILTIN:
        model = BUILTIN[model_cfg.source](input_shape, num_classes, width=model_cfg.width,
                                          batch_norm=model_cfg.batch_norm, sync=model_cfg.sync_batchnorm,
                                          ghost_batch_size=model_cfg.ghost_batch_size)
    elif model_cfg.source == "application":
        model = user_models.build_application(model_cfg.name, input_shape, num_classes, dict(model_cfg.options))
    else:
        model = user_models.build_custom(model_cfg.target, input_shape, num_classes, dict(model_cfg.options))
    user_models.check_outputs(model, model_cfg, num_classes)
    if model_cfg.bn_momentum is not None:
        from harness.models.layers import set_momentum

        set_momentum(model, model_cfg.bn_momentum)
    return model


def check_replicas(model_cfg: ModelConfig, replicas: int, per_replica_batch: int, backend: str) -> None:
    """On several JAX devices a ghost batch must lie within one replica's share of the batch: its chunks are the
    per-replica statistics there (replica_model)."""
    ghost = model_cfg.ghost_batch_size
    if backend == "jax" and replicas > 1 and ghost and per_replica_batch % ghost:
        raise ConfigError("model.ghost_batch_size", ghost, f"a divisor of the per-replica batch {per_replica_batch} "
                          f"with backend=jax gpus={replicas} (each replica's share of the batch is chunked), or null")


def replica_model(model_cfg: ModelConfig, replicas: int, per_replica_batch: int, backend: str) -> ModelConfig:
    """The model a run builds for its devices. Keras's DataParallel on JAX normalises batch norm over the global
    batch, where MirroredStrategy normalises each replica's share: on JAX a built-in model with
    `model.sync_batchnorm=false` (the default) gets per-replica statistics as ghost batch norm in chunks of the
    per-replica batch (the batch is split between the devices in that order), and `sync_batchnorm=true` keeps the
    global ones (Keras's own synchronized layer is TensorFlow's only: on JAX a plain one is already synchronized).
    A user's own model normalises over the global batch (batchnorm_mode says so)."""
    if backend != "jax" or model_cfg.source not in BUILTIN or not model_cfg.batch_norm:
        return model_cfg
    if model_cfg.sync_batchnorm:
        return dataclasses.replace(model_cfg, sync_batchnorm=False)
    if replicas < 2 or model_cfg.ghost_batch_size:
        return model_cfg
    return dataclasses.replace(model_cfg, ghost_batch_size=per_replica_batch)


def batchnorm_mode(model_cfg, replicas: int, backend: str = "tensorflow", layers: int | None = None) -> str:
    """Which batch normalisation ran, for the run's record (`model_cfg` as configured, before replica_model;
    `layers`: the built model's batch-norm layers, None before it is built)."""
    if model_cfg.source not in BUILTIN and layers == 0:
        return "none"
    if backend == "jax" and replicas >= 2 and model_cfg.source not in BUILTIN:
        return ("over the global batch" + ("" if layers else ", if the model has batch norm") +
                " (JAX's DataParallel normalises the whole batch)")
    if model_cfg.source not in BUILTIN and layers:
        return "single replica" if replicas < 2 else "per replica"
    if not model_cfg.batch_norm:
        return "none"
    if model_cfg.ghost_batch_size:
        return f"ghost batch norm (chunks of {model_cfg.ghost_batch_size})"
    if replicas < 2:
        return "single replica"
    if model_cfg.sync_batchnorm:
        return "synchronized across replicas"
    return "per replica (ghost batch norm in chunks of the per-replica batch)" if backend == "jax" else "per replica"
