"""Choose where a run trains: the tf.distribute strategy on TensorFlow, the devices and Keras's distribution on
JAX. The one place that decides where training runs."""
from __future__ import annotations

import contextlib
import math
import os
import platform
import re
import sys
from dataclasses import dataclass

from harness import backend
from harness.config.schema import RunConfig
from harness.data import registry as data
from harness.store.run_files import RunRecord


class DeviceError(RuntimeError):
    """The requested devices cannot be provided."""


@dataclass
class Placement:
    strategy: object | None   # a tf.distribute.Strategy; None on JAX
    replicas: int
    device_names: list[str]
    distribution: object | None = None  # on several JAX devices, keras.distribution.DataParallel

    def scope(self):
        """Where the model and its optimizer are built: the strategy's or the distribution's scope, or nothing to
        enter on one JAX device."""
        if self.distribution is not None:
            return self.distribution.scope()
        return contextlib.nullcontext() if self.strategy is None else self.strategy.scope()

    def training(self):
        """Where the model trains: on JAX, Keras's distribution shards each batch between the devices only while it
        is the current one (a model built in a strategy's scope trains under it wherever fit is called)."""
        return self.distribution.scope() if self.distribution is not None else contextlib.nullcontext()

    @property
    def strategy_name(self) -> str:
        if self.distribution is not None:
            return type(self.distribution).__name__
        return "none (one JAX device)" if self.strategy is None else type(self.strategy).__name__


def limit_xla_threads(intra_op_threads: int | None) -> None:
    """One intra-op thread for XLA on the CPU (a tiny input, cpu_threads), set before JAX
    loads; XLA reads its flags once per process."""
    if intra_op_threads == 1 and "--xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1".strip()


HOST_DEVICES = "--xla_force_host_platform_device_count"


def simulate_jax_devices(count: int) -> None:
    """Split the CPU into `count` JAX host devices (XLA's flag, on the CPU platform only, so it works on a GPU
    machine too); possible only before JAX starts, since XLA reads its flags once per process."""
    if "jax" in sys.modules:  # loaded already (this process ran JAX before): its devices are fixed
        existing = len(sys.modules["jax"].devices("cpu"))
        if existing != count:
            raise DeviceError(f"simulate_devices: this process already has {existing} JAX CPU device(s) and cannot "
                              f"change to {count}; run each device count in its own process")
        return
    flags = re.sub(rf"{HOST_DEVICES}=\S*", "", os.environ.get("XLA_FLAGS", "")).strip()
    os.environ["XLA_FLAGS"] = f"{flags} {HOST_DEVICES}={count}".strip()
    os.environ["JAX_PLATFORMS"] = "cpu"


def jax_placement(gpus: int, devices: tuple[int, ...] | None = None, simulate_devices: bool = False) -> Placement:
    """gpus=0: the CPU; 1: a GPU; N >= 2: Keras's DataParallel over N GPUs, or over N host devices with
    simulate_devices (simulate_jax_devices, before JAX starts). `devices` picks GPUs by JAX's ids."""
    from harness.backend import keras, ops

    platform = "cpu" if gpus == 0 or simulate_devices else "gpu"
    names = ops.device_names(platform)
    if platform == "gpu" and not names:
        raise DeviceError(f"gpus={gpus} with backend=jax: JAX sees no GPU (install jax with CUDA, e.g. "
                          "pip install 'jax[cuda12]', or use gpus=0, or simulate_devices=true)")
    if devices is not None:
        missing = [i for i in devices if f"gpu:{i}" not in names]
        if missing:
            raise DeviceError(f"devices={list(devices)}: GPU id(s) {missing} not visible to JAX ({names})")
        names = [f"gpu:{i}" for i in devices]
    count = max(gpus, 1)
    if len(names) < count:
        raise DeviceError(f"gpus={gpus} with backend=jax: JAX sees {len(names)} {platform} device(s) ({names})")
    names = names[:count]
    if count == 1:
        return Placement(None, 1, names)
    return Placement(None, count, names, keras.distribution.DataParallel(devices=names))


def _split_cpu(tf, count: int) -> None:
    """Split the CPU into `count` logical devices; possible only before TensorFlow initialises."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    except RuntimeError as err:
        existing = len(tf.config.list_logical_devices("CPU"))
        if existing != count:
            raise DeviceError(
                f"simulate_devices: this process already has {existing} logical CPU device(s) and cannot change to "
                f"{count}; run each replica count in its own process"
            ) from err


def make_strategy(gpus: int, devices: tuple[int, ...] | None, simulate_devices: bool,
                  intra_op_threads: int | None = None, inter_op_threads: int | None = None) -> Placement:
    """gpus=0: CPU; 1: one GPU; N >= 2: MirroredStrategy over N GPUs, or over N logical CPU devices when
    simulate_devices is set and no GPU is visible. The thread counts, when given, size TensorFlow's CPU pools."""
    from harness.backend import tf

    try:
        if intra_op_threads:
            tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
        if inter_op_threads:
            tf.config.threading.set_inter_op_parallelism_threads(inter_op_threads)
    except RuntimeError:  # TensorFlow already initialised in this process: its pools stay as they are
        pass

    physical = tf.config.list_physical_devices("GPU")
    if devices is not None:
        missing = [i for i in devices if i >= len(physical)]
        if missing:
            raise DeviceError(f"devices={list(devices)}: GPU id(s) {missing} not visible ({len(physical)} GPU(s))")
        tf.config.set_visible_devices([physical[i] for i in devices], "GPU")
        physical = [physical[i] for i in devices]
    else:
        if gpus == 0 and physical:
            tf.config.set_visible_devices([], "GPU")
    if gpus == 0:
        return Placement(tf.distribute.get_strategy(), 1, ["/cpu:0"])
    if simulate_devices and not physical:
        if gpus >= 2:
            _split_cpu(tf, gpus)
        names = [f"/cpu:{i}" for i in range(gpus)]
        strategy = tf.distribute.MirroredStrategy(names) if gpus >= 2 else tf.distribute.OneDeviceStrategy(names[0])
        return Placement(strategy, gpus, names)
    if gpus > len(physical):
        raise DeviceError(
            f"gpus={gpus}: only {len(physical)} GPU(s) visible; use gpus<={len(physical)} or simulate_devices=true"
        )
    if devices is None:
        tf.config.set_visible_devices(physical[:gpus], "GPU")
    names = [f"/gpu:{i}" for i in range(gpus)]
    strategy = tf.distribute.MirroredStrategy(names) if gpus >= 2 else tf.distribute.OneDeviceStrategy(names[0])
    return Placement(strategy, gpus, names)


def place(cfg: RunConfig, record: RunRecord) -> Placement:
    """Load the backend, choose the devices (and on TensorFlow the strategy), and record where the run trains."""
    from harness.models import registry as models

    intra_op, inter_op = cpu_threads(cfg)
    if cfg.device.backend == "jax":
        simulated = cfg.device.jax_host_devices
        if simulated:
            simulate_jax_devices(cfg.device.gpus)
        backend.select("jax", cpu_only=cfg.device.gpus == 0 or simulated)
        if not simulated:  # host devices run side by side and meet in every step's all-reduce: XLA's own threads
            limit_xla_threads(intra_op)
        # Under the harness launcher, CUDA_VISIBLE_DEVICES already holds exactly the GPUs `devices` names.
        explicit = None if os.environ.get("HARNESS_GPUS_ASSIGNED") else cfg.device.devices
        placement = jax_placement(cfg.device.gpus, explicit, cfg.device.simulate_devices)
        threads = {"intra_op": None if simulated else intra_op, "xla_flags": os.environ.get("XLA_FLAGS", "")}
    else:
        backend.select("tensorflow")
        from harness.backend import tf

        # Under the harness launcher, CUDA_VISIBLE_DEVICES already holds exactly the GPUs `devices` names.
        explicit = None if os.environ.get("HARNESS_GPUS_ASSIGNED") else cfg.device.devices
        placement = make_strategy(cfg.device.gpus, explicit, cfg.device.simulate_devices,
                                          intra_op_threads=intra_op, inter_op_threads=inter_op)
        threads = {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                   "inter_op": tf.config.threading.get_inter_op_parallelism_threads()}
    record.set_environment(
        **backend.ops.versions(), strategy=placement.strategy_name,
        replicas=placement.replicas, devices=placement.device_names, platform=platform.platform(),
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        simulated_devices=cfg.device.simulate_devices and placement.device_names[0].lstrip("/").startswith("cpu"),
        batchnorm=models.batchnorm_mode(cfg.model, placement.replicas, cfg.device.backend), cpu_threads=threads,
        hardware=hardware(placement),
    )
    return placement


def hardware(placement: Placement) -> dict:
    """The machine a run trains on, for a time measured on it: the CPU's model and cores (those this process may
    use beside the machine's), and the model of each GPU the run uses (none on a CPU or simulated devices)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    gpus = backend.ops.accelerators() if any("gpu" in name.lower() for name in placement.device_names) else []
    return {"cpu_model": _cpu_model(), "cpu_count": os.cpu_count(), "cpus_usable": usable,
            "gpus": gpus[:placement.replicas]}


def _cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what the platform says."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


SMALL_INPUT = 256  # numbers per sample below which one intra-op thread is fastest (measured on MNIST-1D)


def cpu_threads(cfg: RunConfig) -> tuple[int | None, int | None]:
    """The backend's (intra-op, inter-op) CPU threads for this run; None keeps its default.

    Tiny per-sample inputs get one intra-op thread: splitting ops that small over cores costs more than it saves
    (about 2x slower at batch 8 on MNIST-1D with 2 threads). HARNESS_THREADS, set by the launcher for every run
    (the cores divided among the runs it runs at once), caps both, so parallel runs do not oversubscribe the
    cores; it never raises the one thread of a tiny input, whatever the size of the sweep.
    """
    value = os.environ.get("HARNESS_THREADS")
    cap = int(value) if value else None
    shape = data.input_shape(cfg.data)
    if cfg.device.gpus == 0 and shape is not None and math.prod(shape) < SMALL_INPUT:
        return 1, cap
    return cap, cap


SHARE_KEYS = ("HARNESS_RUNS_PER_GPU", "TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_MEM_FRACTION",
              "XLA_PYTHON_CLIENT_PREALLOCATE", "CUDA_VISIBLE_DEVICES", "HARNESS_THREADS")
OUT_OF_MEMORY = ("RESOURCE_EXHAUSTED", "Out of memory", "OOM when allocating", "out of memory")


def single_device(model_cfg, model, data_in, replicas: int):
    """The trained model on one device, for the end-of-run probes and precise batch norm: under data parallelism a
    single-device twin (built outside the strategy's or the distribution's scope), whose plain variables the probes
    can move and differentiate twice."""
    if replicas < 2:
        return model
    from harness.models import registry as models

    twin = models.build(model_cfg, data_in.input_shape, data_in.num_classes)
    twin.set_weights(model.get_weights())
    return twin


def launcher_share() -> dict:
    """What the launcher gave this run of the machine (run.json's environment `share`): its GPUs, how many runs
    share each, the memory settings that split a shared GPU, and its CPU threads; empty outside a launcher."""
    share = {key: os.environ[key] for key in SHARE_KEYS if key in os.environ}
    return {"share": share} if share else {}


def out_of_memory_hint(err: BaseException) -> str | None:
    """One line for a run that ran out of GPU memory on a GPU it shared with other runs, naming the setting to
    lower; None for any other error (or a GPU of its own: the model or the batch is too large for it)."""
    shared = int(os.environ.get("HARNESS_RUNS_PER_GPU") or 1)
    text = f"{type(err).__name__}: {err}"
    if shared <= 1 or not ("ResourceExhausted" in type(err).__name__ or any(s in text for s in OUT_OF_MEMORY)):
        return None
    return (f"out of GPU memory on a GPU shared by {shared} runs (each with about 1/{shared} of it): lower "
            f"hydra.launcher.runs_per_gpu (now {shared}), or 1 for a GPU of its own")
