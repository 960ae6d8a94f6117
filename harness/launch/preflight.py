"""Checks on a command's whole list of runs before any of them starts (no Hydra, no TensorFlow).

`cli` composes and validates each run's config; these checks need all of them together, or the machine, or the
folders they will write: the GPUs asked for must exist, and a folder to resume must hold this command's runs.
"""
from __future__ import annotations

from pathlib import Path

from harness.config.schema import ConfigError, RunConfig
from harness.store import sweep_file
from harness.store.files import DamagedFile, read_json
from harness.store.layout import RUN_FILE
from harness.store.run_files import config_hash, recorded_config


def check_searchpath(paths: list[str]) -> None:
    """A user's config folders (--config-dir, hydra.searchpath) exist: Hydra would skip a missing one silently."""
    for path in paths:
        folder = Path(str(path).removeprefix("file://")).expanduser()
        if str(path).startswith("file://") and not folder.is_dir():
            raise ConfigError("--config-dir", str(folder), "an existing folder of configs (dataset/*.yaml, "
                              "study/*.yaml, ...)")


def check_n_jobs(n_jobs) -> None:
    """The harness launcher's `n_jobs`: runs at once, or null for one per GPU or CPU core."""
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1):
        raise ConfigError("hydra.launcher.n_jobs", n_jobs, "an integer >= 1, or null for one run at a time per GPU "
                          "or per CPU core")


def check_runs_per_gpu(value) -> None:
    """The harness launcher's `runs_per_gpu`: GPU runs sharing one GPU at once."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("hydra.launcher.runs_per_gpu", value, "an integer >= 1: the GPU runs that share one GPU at "
                          "once (1: a GPU each)")


def check_slurm_arrays(launcher_cfg) -> None:
    """The SLURM preset's array keys: `max_array_size` (tasks per array, null for the cluster's MaxArraySize) and
    `array_parallelism` (runs at once in the whole sweep)."""
    for key, allowed_null in (("max_array_size", True), ("array_parallelism", False)):
        value = launcher_cfg.get(key)
        if value is None and allowed_null:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"hydra.launcher.{key}", value, "an integer >= 1" + (
                ", or null for the cluster's MaxArraySize" if allowed_null else ""))


def check_devices(run_configs: list[RunConfig], gpu_ids: list[int], ids_applied: bool = False) -> None:
    """Runs on this machine may not ask for more GPUs than it has, unless they simulate devices on the CPU (on
    TensorFlow only where no GPU is visible; on JAX always, as host devices).

    `ids_applied`: the launcher already narrowed CUDA_VISIBLE_DEVICES to the run's `devices`.
    """
    for cfg in run_configs:
        device = cfg.device
        if device.devices is not None and not ids_applied:
            missing = [i for i in device.devices if i not in gpu_ids]
            if missing:
                raise ConfigError("devices", list(device.devices), f"ids of visible GPUs {gpu_ids}")
        elif device.gpus > len(gpu_ids) and not (device.simulate_devices and (not gpu_ids or device.backend == "jax")):
            raise ConfigError(
                "gpus", device.gpus, f"at most {len(gpu_ids)} (GPUs visible here), or simulate_devices=true "
                "to split the CPU into that many devices (only when no GPU is visible)",
            )


def check_existing_runs(jobs: list[list[str]], run_configs: list[RunConfig], output_dir: Path,
                        multirun: bool) -> None:
    """Re-running into a folder resumes it, so each run folder must hold this command's run there (or none).

    The same run is the same resolved config, however the command spelled or ordered its overrides. A job whose
    config fingerprint the folder's sweep.json already holds was planned the same before: its run.json is not
    read (a resumed sweep of thousands of runs starts at once); any other job's run.json is compared.
    """
    planned = sweep_file.config_hashes(output_dir) if multirun else {}
    for num, (overrides, run_cfg) in enumerate(zip(jobs, run_configs)):
        if planned and planned.get(str(num)) == config_hash(run_cfg.identity()):
            continue
        run_dir = output_dir / str(num) if multirun else output_dir
        try:
            record = read_json(run_dir / RUN_FILE)
        except DamagedFile:  # the run is run again, whatever it held
            record = None
        if record is not None and record.get("config") != recorded_config(run_cfg.identity()):
            key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
            raise ConfigError(
                key, str(output_dir), f"a new folder or one holding this same command's runs; {run_dir} ran "
                f"'{' '.join(record.get('overrides', []))}' but this command's run there is '{' '.join(overrides)}'"
            )
