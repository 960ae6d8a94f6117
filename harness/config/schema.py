"""The run's configuration as frozen dataclasses, validated from a plain dict.

This module never imports hydra, omegaconf or TensorFlow: `cli` hands it the composed config as a dict, and
everything below `cli` receives the dataclasses built here. Every error names the key, the value and what is
allowed, in one line.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass
from typing import Any

from harness.config import ramp, recipe
from harness.data import registry as datasets
from harness.data import transforms
from harness.data.registry import DataConfig
from harness.fields import ConfigError, bool_value, check_keys, choice, float_value, int_value
from harness.models import registry as models
from harness.models.registry import ModelConfig

PREPROCESS_MISMATCHES = ("none", "unscaled", "shifted")
BUDGETS = ("epochs", "steps")
BACKENDS = ("tensorflow", "jax")  # as harness.backend.BACKENDS, which config may not import (it loads no backend)
LR_SCALINGS = ("none", "linear", "sqrt")


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
    probes: bool = True           # noise scale and weight distance per epoch; Hessian and sharpness at the end
    probe_samples: int = 512      # the fixed training subset the end-of-run probes measure on
    lr_factor: float = 1.0        # the learning rate is lr x lr_factor (before lr_scaling): +study=tuned sweeps it
    tune_fraction: float = 0.0    # a stratified slice of the training split held out to choose the learning rate
    target_tune_acc: float | None = None  # stop once the tuning slice's accuracy reaches this (checked within epochs)
    target_check: str = "steps"   # where target_tune_acc is checked: steps (geometrically within epochs, calls of a
    # few steps: steps to the target finely resolved) or epoch (at each epoch's end, a whole epoch a call: a user's run)
    target_max_samples: int | None = None  # with target_tune_acc: stop at this many training samples without it (a
    # study's race or cap: target.json's stopped_short); None: at `epochs`
    pause_epoch: int | None = None  # stop after this epoch, the schedule still planned over `epochs`, and keep the
    # checkpoint (status `paused`): a study's rung, continued by a later job (not part of the run's identity)
    pause_when: str = "always"    # cheaper: pause only where its set-up and compile, as the run measured them, are
    # less than its epochs left would take (harness.run.pause); else train on to the end
    momentum: float | None = None  # the first-moment coefficient; None: the optimizer's own (MOMENTUM_KEYWORD)
    nesterov: bool = False        # Nesterov momentum, for SGD
    weight_decay: float | None = None  # Keras's decoupled decay (lr x wd a step); None: the optimizer's own
    lr_schedule: str = "constant"  # the shape after the warm-up: constant, cosine, linear, step
    label_smoothing: float = 0.0  # on the training loss only
    beta_2: float | None = None   # the second-moment coefficient; None: the optimizer's own (BETA_2_KEYWORD)
    epsilon: float | None = None  # the denominator's floor; None: the optimizer's own (EPSILON_KEYWORD)
    precise_bn: int | None = None  # batch-norm statistics recomputed on this many training samples before each
    # evaluation, and kept (harness.run.precise_bn); None: the moving averages as trained
    batch_schedule: tuple[tuple[int, int], ...] | None = None  # ((start_epoch, batch), ...): the batch grows at
    # these epochs (harness.config.ramp); batch_size is then the first phase's

    @property
    def checks_within_epochs(self) -> bool:
        """target_tune_acc checked between compiled calls of a few steps (config.batching.TARGET_CHUNK)."""
        return self.target_tune_acc is not None and self.target_check == "steps"


@dataclass(frozen=True)
class DeviceConfig:
    gpus: int
    devices: tuple[int, ...] | None
    simulate_devices: bool
    backend: str = "tensorflow"   # the Keras 3 backend the run trains on: tensorflow or jax

    @property
    def jax_host_devices(self) -> bool:
        """Several JAX devices split from the CPU (simulate_devices): one step per call (config.batching)."""
        return self.backend == "jax" and self.simulate_devices and self.gpus >= 2


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
        schedule = self.train.batch_schedule
        flat["batch_schedule"] = None if schedule is None else [list(phase) for phase in schedule]
        return {**flat, **self.data.flat(), **self.model.flat()}

    def identity(self) -> dict[str, Any]:
        """flat() less the recipe's keys (and target_check, batch_schedule) at their defaults, and less pause_epoch:
        what run.json's config records and a resume compares, so a run made before such a key existed is the same
        run, and a paused run and the job that continues it are one run."""
        defaults = UNRECORDED_AT_DEFAULT
        return {k: v for k, v in self.flat().items()
                if k not in NOT_IDENTITY and (k not in defaults or v != defaults[k])}


TOP_KEYS = {
    "batch_size", "per_replica_batch", "gpus", "devices", "simulate_devices", "shuffle", "imbalance",
    "epochs", "lr", "optimizer", "seed", "dataset", "model", "steps_per_execution", "train_fraction",
    "preprocess_mismatch", "budget", "budget_steps", "lr_scaling", "base_batch_size", "warmup_epochs",
    "target_train_loss", "probes", "probe_samples", "lr_factor", "tune_fraction", "target_tune_acc", "target_check",
    "target_max_samples", "pause_epoch", "pause_when", "backend", "batch_schedule", *recipe.RECIPE_DEFAULTS,
}
NOT_IDENTITY = ("pause_epoch", "pause_when")  # where a run stops, not what it is: never in run.json's config nor a row's columns
TARGET_CHECKS = ("steps", "epoch")
PAUSE_WHEN = ("always", "cheaper")  # harness.run.pause decides what cheaper means
UNRECORDED_AT_DEFAULT = {**recipe.RECIPE_DEFAULTS, "target_check": "steps", "batch_schedule": None,
                         "target_max_samples": None}
DATA_KEYS = datasets.ALL_KEYS
MODEL_KEYS = models.ALL_KEYS


def _devices(cfg: dict) -> DeviceConfig:
    gpus = int_value(cfg, "gpus", low=0)
    devices = cfg["devices"]
    if devices is not None:
        if not isinstance(devices, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices
        ) or len(set(devices)) != len(devices):
            raise ConfigError("devices", devices, "null or a list of distinct GPU ids, e.g. [0,2]")
        if len(devices) != gpus:
            raise ConfigError("devices", devices, f"a list of exactly gpus={gpus} ids")
        devices = tuple(devices)
    simulate = bool_value(cfg, "simulate_devices")
    if simulate and devices is not None:
        raise ConfigError("devices", list(devices), "null when simulate_devices=true")
    backend = choice(cfg, "backend", BACKENDS)
    if backend == "jax":
        if importlib.util.find_spec("jax") is None:
            raise ConfigError("backend", backend, "tensorflow, or install JAX first: pip install -e \".[jax]\"")
    return DeviceConfig(gpus=gpus, devices=devices, simulate_devices=simulate, backend=backend)


def _study_keys(cfg: dict) -> dict[str, Any]:
    """The keys that separate the suspected causes of a gap, and the controls of the batch-size study."""
    fraction = float_value(cfg, "train_fraction")
    if not 0.0 < fraction <= 1.0:
        raise ConfigError("train_fraction", cfg["train_fraction"], "a number in (0, 1]")
    budget = choice(cfg, "budget", BUDGETS)
    budget_steps = cfg["budget_steps"]
    if budget == "steps":
        budget_steps = None if budget_steps is None else int_value(cfg, "budget_steps", low=1)
    elif budget_steps is not None:
        raise ConfigError("budget_steps", budget_steps, "null unless budget=steps")
    warmup = float_value(cfg, "warmup_epochs")
    if warmup < 0:
        raise ConfigError("warmup_epochs", cfg["warmup_epochs"], "a number >= 0")
    tune = float_value(cfg, "tune_fraction")
    if not 0.0 <= tune < 1.0:
        raise ConfigError("tune_fraction", cfg["tune_fraction"], "a number in [0, 1) (0: no tuning slice)")
    if float_value(cfg, "lr_factor") <= 0:
        raise ConfigError("lr_factor", cfg["lr_factor"], "a number > 0")
    target = cfg["target_train_loss"]
    if target is not None and (float_value(cfg, "target_train_loss") <= 0):
        raise ConfigError("target_train_loss", target, "null or a number > 0")
    tune_target = cfg["target_tune_acc"]
    if tune_target is not None:
        if not 0.0 < float_value(cfg, "target_tune_acc") <= 1.0:
            raise ConfigError("target_tune_acc", tune_target, "null or a number in (0, 1]")
        if tune <= 0:
            raise ConfigError("target_tune_acc", tune_target, "null unless tune_fraction > 0 (the accuracy is "
                              "measured on the tuning slice)")
        if target is not None:
            raise ConfigError("target_tune_acc", tune_target, f"null when target_train_loss={target} is set (one "
                              "target per run)")
    check = choice(cfg, "target_check", TARGET_CHECKS)
    if check != "steps" and tune_target is None:
        raise ConfigError("target_check", check, "steps unless target_tune_acc is set (it says where that target is "
                          "checked)")
    most = cfg.get("target_max_samples")
    if most is not None:
        most = int_value(cfg, "target_max_samples", low=1)
        if tune_target is None:
            raise ConfigError("target_max_samples", most, "null unless target_tune_acc is set (where a run that has "
                              "not reached that target stops)")
    pause = cfg.get("pause_epoch")
    if pause is not None:
        pause = int_value(cfg, "pause_epoch", low=1)
        if budget != "epochs" or pause >= int_value(cfg, "epochs", low=1):
            raise ConfigError("pause_epoch", pause, "null, or an epoch before `epochs` with budget=epochs (where the "
                              "run stops, its checkpoint kept, to be continued)")
    return {
        "train_fraction": fraction,
        "preprocess_mismatch": choice(cfg, "preprocess_mismatch", PREPROCESS_MISMATCHES),
        "budget": budget,
        "budget_steps": budget_steps,
        "lr_scaling": choice(cfg, "lr_scaling", LR_SCALINGS),
        "base_batch_size": int_value(cfg, "base_batch_size", low=1),
        "warmup_epochs": warmup,
        "target_train_loss": None if target is None else float(target),
        "lr_factor": float(cfg["lr_factor"]),
        "tune_fraction": tune,
        "target_tune_acc": None if tune_target is None else float(tune_target),
        "target_check": check,
        "target_max_samples": most,
        "pause_epoch": pause,
        "pause_when": choice(cfg, "pause_when", PAUSE_WHEN),
    }


def from_dict(cfg: dict[str, Any]) -> RunConfig:
    """Validate a composed config (plain dict) and freeze it. Raises ConfigError."""
    check_keys(cfg, TOP_KEYS, "")
    missing = sorted(TOP_KEYS - set(cfg))
    if missing:
        raise ConfigError(missing[0], None, "a value (the key is missing from the config)")
    data = datasets.config_from_dict(cfg["dataset"])
    imbalance = float_value(cfg, "imbalance")
    if not 0.0 <= imbalance < 1.0:
        raise ConfigError("imbalance", cfg["imbalance"], "a number in [0, 1)")
    optimizer = cfg["optimizer"]
    if optimizer not in recipe.OPTIMIZERS:
        raise ConfigError("optimizer", optimizer, f"one of {', '.join(recipe.OPTIMIZERS)}")
    lr = float_value(cfg, "lr")
    if lr <= 0:
        raise ConfigError("lr", cfg["lr"], "a number > 0")
    study = _study_keys(cfg)
    epochs = int_value(cfg, "epochs", low=1)
    schedule = ramp.parse(cfg["batch_schedule"], epochs, study["budget"])
    train = TrainConfig(
        **study,
        **recipe.from_dict(cfg, optimizer),
        batch_schedule=schedule,
        batch_size=int_value(cfg, "batch_size", low=1) if schedule is None else schedule[0][1],
        per_replica_batch=bool_value(cfg, "per_replica_batch"),
        epochs=epochs,
        lr=lr,
        optimizer=optimizer,
        seed=int_value(cfg, "seed", low=0),
        shuffle=bool_value(cfg, "shuffle"),
        imbalance=imbalance,
        steps_per_execution=int_value(cfg, "steps_per_execution", low=0),
        probes=bool_value(cfg, "probes"),
        probe_samples=int_value(cfg, "probe_samples", low=2),
    )
    device = _devices(cfg)
    counts = datasets.train_class_counts(data)
    if train.tune_fraction > 0 and counts is not None and not transforms.tune_counts(counts, train.tune_fraction).any():
        raise ConfigError("tune_fraction", cfg["tune_fraction"], f"0, or large enough to hold out at least one sample "
                          f"of some class (the training split has {int(counts.sum())}, {int(counts.max())} in its "
                          "largest class)")
    model = models.config_from_dict(cfg["model"], datasets.input_shape(data), None if counts is None else len(counts))
    if train.precise_bn is not None and model.source in models.BUILTIN and not model.batch_norm:
        raise ConfigError("precise_bn", train.precise_bn, "null unless model.batch_norm=true (the model has no batch "
                          "normalization to recompute)")
    run = RunConfig(data=data, model=model, train=train, device=device)
    train_size = datasets.expected_train_size(data, imbalance, train.train_fraction, train.tune_fraction)
    if train_size is None:  # known only once loaded (TFDS): the run's own planner checks it
        return run
    # the planner a run uses raises the same one-line error, naming the key, now instead of at run time
    planned = ramp.plan_run(train, max(device.gpus, 1), train_size, device.backend, device.jax_host_devices)
    check_phases(model, planned, device.backend)
    return run


def check_phases(model: ModelConfig, planned: ramp.RunPlan, backend: str) -> None:
    """Every phase's batch fits the model on its devices; a ramp where the model's own batch-norm chunk would change
    with the batch (a built-in model's per-replica statistics on several JAX devices) is refused."""
    for phase in planned.phases:
        models.check_replicas(model, phase.plan.replicas, phase.plan.per_replica_batch_size, backend)
    built = [models.replica_model(model, p.plan.replicas, p.plan.per_replica_batch_size, backend)
             for p in planned.phases]
    if any(one != built[0] for one in built):
        raise ConfigError(ramp.KEY, [[p.start_epoch, p.plan.batch_size] for p in planned.phases], f"null with "
                          f"backend={backend} "
                          f"gpus={planned.first.replicas} and a built-in model with per-replica batch norm (its ghost "
                          "batch, the per-replica batch, is built into the model); or model.sync_batchnorm=true, or "
                          "a model.ghost_batch_size that divides every phase's per-replica batch")
