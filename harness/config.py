"""The run's configuration as frozen dataclasses, validated from a plain dict.

This module never imports hydra, omegaconf or TensorFlow: `cli` hands it the composed config as a dict, and
everything below `cli` receives the dataclasses built here. Every error names the key, the value and what is
allowed, in one line.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from harness import data as datasets

OPTIMIZERS = ("adam", "sgd", "momentum", "rmsprop")
PREPROCESS_MISMATCHES = ("none", "unscaled", "shifted")
BUDGETS = ("epochs", "steps")
LR_SCALINGS = ("none", "linear", "sqrt")


class ConfigError(ValueError):
    """A bad key or value; the message is the one line shown to the user."""

    def __init__(self, key: str, value: Any, allowed: str):
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={value!r} is not allowed: {allowed}")


@dataclass(frozen=True)
class DataConfig:
    name: str
    num_samples: int | None
    train_split: float | None
    data_seed: int


@dataclass(frozen=True)
class ModelConfig:
    name: str
    width: float
    batch_norm: bool
    sync_batchnorm: bool = False  # batch statistics over all replicas instead of each replica's slice


@dataclass(frozen=True)
class TrainConfig:
    batch_size: int
    per_replica_batch: bool
    epochs: int
    lr: float
    optimizer: str
    seed: int
    shuffle: bool
    imbalance: float
    steps_per_execution: int = 0  # optimizer steps per compiled call; 0: a whole epoch per call
    train_fraction: float = 1.0   # fraction of the training split used (stratified)
    preprocess_mismatch: str = "none"  # how validation is preprocessed differently from training
    budget: str = "epochs"        # epochs: `epochs` for every batch size; steps: `budget_steps` updates for all
    budget_steps: int | None = None
    lr_scaling: str = "none"      # learning rate scaled with global batch / base_batch_size
    base_batch_size: int = 32
    warmup_epochs: float = 0.0    # linear warm-up to the (scaled) learning rate over this many epochs
    target_train_loss: float | None = None  # stop once the post-epoch training loss is at or below this


@dataclass(frozen=True)
class DeviceConfig:
    gpus: int
    devices: tuple[int, ...] | None
    simulate_devices: bool


@dataclass(frozen=True)
class RunConfig:
    data: DataConfig
    model: ModelConfig
    train: TrainConfig
    device: DeviceConfig

    def flat(self) -> dict[str, Any]:
        """Config values by their command-line key (`batch_size`, `dataset.num_samples`, ...)."""
        flat: dict[str, Any] = {}
        for group in (self.train, self.device):
            flat.update(dataclasses.asdict(group))
        flat["devices"] = None if self.device.devices is None else list(self.device.devices)
        flat["dataset"] = self.data.name
        flat.update({f"dataset.{k}": v for k, v in dataclasses.asdict(self.data).items() if k != "name"})
        flat["model"] = self.model.name
        flat.update({f"model.{k}": v for k, v in dataclasses.asdict(self.model).items() if k != "name"})
        return flat


TOP_KEYS = {
    "batch_size", "per_replica_batch", "gpus", "devices", "simulate_devices", "shuffle", "imbalance",
    "epochs", "lr", "optimizer", "seed", "dataset", "model", "steps_per_execution", "train_fraction",
    "preprocess_mismatch", "budget", "budget_steps", "lr_scaling", "base_batch_size", "warmup_epochs",
    "target_train_loss",
}
DATA_KEYS = {"name", "num_samples", "train_split", "data_seed"}
MODEL_KEYS = {"name", "width", "batch_norm", "sync_batchnorm"}


def _check_keys(section: dict, allowed: set[str], prefix: str) -> None:
    for key in section:
        if key not in allowed:
            shown = ", ".join(sorted(f"{prefix}{k}" for k in allowed))
            raise ConfigError(f"{prefix}{key}", section[key], f"unknown key; valid keys are {shown}")


def _int(cfg: dict, key: str, low: int | None = None, name: str | None = None) -> int:
    name = name or key
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, value, "an integer" + (f" >= {low}" if low is not None else ""))
    if low is not None and value < low:
        raise ConfigError(name, value, f"an integer >= {low}")
    return value


def _float(cfg: dict, key: str, name: str | None = None) -> float:
    name = name or key
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(name, value, "a finite number")
    return float(value)


def _bool(cfg: dict, key: str, name: str | None = None) -> bool:
    value = cfg[key]
    if not isinstance(value, bool):
        raise ConfigError(name or key, value, "true or false")
    return value


def _data(cfg: dict) -> DataConfig:
    if not isinstance(cfg, dict):
        raise ConfigError("dataset", cfg, f"one of {', '.join(datasets.DATASETS)}")
    _check_keys(cfg, DATA_KEYS, "dataset.")
    name = cfg.get("name")
    if name not in datasets.DATASETS:
        raise ConfigError("dataset", name, f"one of {', '.join(datasets.DATASETS)}")
    spec = datasets.DATASETS[name]
    num_samples = cfg.get("num_samples")
    train_split = cfg.get("train_split")
    if spec.fixed_size is not None:
        if num_samples is not None:
            raise ConfigError("dataset.num_samples", num_samples, f"null ({name} has a fixed size)")
        if train_split is not None:
            raise ConfigError("dataset.train_split", train_split, f"null ({name} has a fixed train/test split)")
    else:
        if spec.generated:
            num_samples = _int(cfg, "num_samples", low=20 * spec.num_classes, name="dataset.num_samples")
        elif num_samples is not None:
            raise ConfigError("dataset.num_samples", num_samples, f"null ({name} has a fixed size)")
        train_split = _float(cfg, "train_split", name="dataset.train_split")
        if not 0.0 < train_split < 1.0:
            raise ConfigError("dataset.train_split", train_split, "a number in (0, 1)")
    data_seed = _int(cfg, "data_seed", name="dataset.data_seed")
    return DataConfig(name=name, num_samples=num_samples, train_split=train_split, data_seed=data_seed)


def _model(cfg: dict) -> ModelConfig:
    from harness.models import MODEL_NAMES  # a plain tuple; importing it does not load TensorFlow

    if not isinstance(cfg, dict):
        raise ConfigError("model", cfg, f"one of {', '.join(MODEL_NAMES)}")
    _check_keys(cfg, MODEL_KEYS, "model.")
    name = cfg.get("name")
    if name not in MODEL_NAMES:
        raise ConfigError("model", name, f"one of {', '.join(MODEL_NAMES)}")
    width = _float(cfg, "width", name="model.width")
    if width <= 0:
        raise ConfigError("model.width", width, "a number > 0")
    return ModelConfig(name=name, width=width, batch_norm=_bool(cfg, "batch_norm", "model.batch_norm"),
                       sync_batchnorm=_bool(cfg, "sync_batchnorm", "model.sync_batchnorm"))


def _devices(cfg: dict) -> DeviceConfig:
    gpus = _int(cfg, "gpus", low=0)
    devices = cfg["devices"]
    if devices is not None:
        if not isinstance(devices, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices
        ) or len(set(devices)) != len(devices):
            raise ConfigError("devices", devices, "null or a list of distinct GPU ids, e.g. [0,2]")
        if len(devices) != gpus:
            raise ConfigError("devices", devices, f"a list of exactly gpus={gpus} ids")
        devices = tuple(devices)
    simulate = _bool(cfg, "simulate_devices")
    if simulate and devices is not None:
        raise ConfigError("devices", list(devices), "null when simulate_devices=true")
    return DeviceConfig(gpus=gpus, devices=devices, simulate_devices=simulate)


def _choice(cfg: dict, key: str, allowed: tuple[str, ...]) -> str:
    if cfg[key] not in allowed:
        raise ConfigError(key, cfg[key], f"one of {', '.join(allowed)}")
    return cfg[key]


def _study_keys(cfg: dict) -> dict[str, Any]:
    """The keys that separate the suspected causes of a gap, and the controls of the batch-size study."""
    fraction = _float(cfg, "train_fraction")
    if not 0.0 < fraction <= 1.0:
        raise ConfigError("train_fraction", cfg["train_fraction"], "a number in (0, 1]")
    budget = _choice(cfg, "budget", BUDGETS)
    budget_steps = cfg["budget_steps"]
    if budget == "steps":
        budget_steps = None if budget_steps is None else _int(cfg, "budget_steps", low=1)
    elif budget_steps is not None:
        raise ConfigError("budget_steps", budget_steps, "null unless budget=steps")
    warmup = _float(cfg, "warmup_epochs")
    if warmup < 0:
        raise ConfigError("warmup_epochs", cfg["warmup_epochs"], "a number >= 0")
    target = cfg["target_train_loss"]
    if target is not None and (_float(cfg, "target_train_loss") <= 0):
        raise ConfigError("target_train_loss", target, "null or a number > 0")
    return {
        "train_fraction": fraction,
        "preprocess_mismatch": _choice(cfg, "preprocess_mismatch", PREPROCESS_MISMATCHES),
        "budget": budget,
        "budget_steps": budget_steps,
        "lr_scaling": _choice(cfg, "lr_scaling", LR_SCALINGS),
        "base_batch_size": _int(cfg, "base_batch_size", low=1),
        "warmup_epochs": warmup,
        "target_train_loss": None if target is None else float(target),
    }


def from_dict(cfg: dict[str, Any]) -> RunConfig:
    """Validate a composed config (plain dict) and freeze it. Raises ConfigError."""
    _check_keys(cfg, TOP_KEYS, "")
    missing = sorted(TOP_KEYS - set(cfg))
    if missing:
        raise ConfigError(missing[0], None, "a value (the key is missing from the config)")
    data = _data(cfg["dataset"])
    imbalance = _float(cfg, "imbalance")
    if not 0.0 <= imbalance < 1.0:
        raise ConfigError("imbalance", cfg["imbalance"], "a number in [0, 1)")
    optimizer = cfg["optimizer"]
    if optimizer not in OPTIMIZERS:
        raise ConfigError("optimizer", optimizer, f"one of {', '.join(OPTIMIZERS)}")
    lr = _float(cfg, "lr")
    if lr <= 0:
        raise ConfigError("lr", cfg["lr"], "a number > 0")
    study = _study_keys(cfg)
    train = TrainConfig(
        **study,
        batch_size=_int(cfg, "batch_size", low=1),
        per_replica_batch=_bool(cfg, "per_replica_batch"),
        epochs=_int(cfg, "epochs", low=1),
        lr=lr,
        optimizer=optimizer,
        seed=_int(cfg, "seed", low=0),
        shuffle=_bool(cfg, "shuffle"),
        imbalance=imbalance,
        steps_per_execution=_int(cfg, "steps_per_execution", low=0),
    )
    device = _devices(cfg)
    run = RunConfig(data=data, model=_model(cfg["model"]), train=train, device=device)
    try:
        train_size = datasets.expected_train_size(data, imbalance, train.train_fraction)
    except Exception as err:  # generating or splitting the local data failed: nothing can run with these settings
        settings = ", ".join(f"dataset.{k}={v}" for k, v in dataclasses.asdict(data).items() if k != "name")
        reason = str(err).splitlines()[0] if str(err) else ""
        raise ConfigError("dataset", data.name, f"settings it can be loaded with ({settings} failed: "
                          f"{type(err).__name__}: {reason})") from None
    replicas = max(device.gpus, 1)
    global_batch = train.batch_size * (replicas if train.per_replica_batch else 1)
    if global_batch % replicas:
        raise ConfigError(
            "batch_size", train.batch_size,
            f"a multiple of gpus={replicas} so every replica gets the same share, or per_replica_batch=true",
        )
    if global_batch > train_size:
        limit = train_size // replicas if train.per_replica_batch else train_size
        what = f" divided by gpus={replicas} (per_replica_batch=true)" if train.per_replica_batch else ""
        raise ConfigError("batch_size", train.batch_size, f"an integer from 1 to {limit}: the training-set size "
                          f"{train_size}{what}")
    _check_steps_per_execution(train.steps_per_execution, math.ceil(train_size / global_batch), replicas)
    return run


def _check_steps_per_execution(value: int, steps_per_epoch: int, replicas: int) -> None:
    """A compiled call may not run into the next epoch; Keras's multi-step loop fails under MirroredStrategy."""
    if value > 1 and replicas > 1:
        raise ConfigError("steps_per_execution", value, f"0 or 1 with gpus={replicas} (Keras's multi-step loop "
                          "fails under MirroredStrategy)")
    if value and steps_per_epoch % value:
        raise ConfigError("steps_per_execution", value, f"0 (a whole epoch per call) or a divisor of the "
                          f"{steps_per_epoch} steps per epoch")
