"""Hydra launcher `harness`: each job runs as `python -m harness` in a process of its own, up to n_jobs at once.

Why not Hydra's own: the basic launcher runs jobs in one process (TensorFlow's device setup cannot change
between runs), joblib reuses worker processes, submitit_local gives every job the same GPUs, and none resumes.
The job is an ordinary single run with `hydra.run.dir` set to the job's sweep folder, so it writes the same
files, and resumes the same way, as a run started by any other launcher. CPU jobs run one after another in warm
processes (harness.launch.worker) that import TensorFlow once, with the same metrics; `reuse_processes: false` gives
every job a fresh process, as GPU jobs and simulated devices always get.
"""

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)


@dataclass
class HarnessLauncherConf:
    _target_: str = "hydra_plugins.harness_launcher.launcher.HarnessLauncher"
    n_jobs: Optional[int] = None          # runs at once; null: one per GPU, or one per CPU core (memory allowing)
    gpu_ids: Optional[List[int]] = None   # GPUs to hand out; null: CUDA_VISIBLE_DEVICES, else nvidia-smi
    poll_seconds: float = 0.5
    stop_timeout_s: float = 60.0          # after Ctrl-C, how long runs get to record `interrupted`
    reuse_processes: bool = True          # CPU jobs in warm processes (TensorFlow imported once per slot)


ConfigStore.instance().store(group="hydra/launcher", name="harness", node=HarnessLauncherConf)


def _expected_epochs(run_cfg) -> int:
    """Epochs the run will train (a step budget decides them from the batch size), for the progress ETA."""
    from harness.config.batching import plan_batches, plan_schedule
    from harness.data.registry import expected_train_size

    train = run_cfg.train
    try:
        size = expected_train_size(run_cfg.data, train.imbalance, train.train_fraction, train.tune_fraction)
        plan = plan_batches(train.batch_size, train.per_replica_batch, max(run_cfg.device.gpus, 1), size,
                            backend=run_cfg.device.backend)
        return plan_schedule(plan, train).epochs
    except ValueError:  # the run itself will report it
        return train.epochs


def _tracking_watch(sweep_dir: Path):
    """The tracking process this command started for the sweep (tracking=mlflow; a tracking.json left by an earlier
    command is not enough), where it logs the runs from their files as they train; else None."""
    from harness.launch.tracking_watch import started

    tracker = started(sweep_dir)
    return tracker if tracker is not None and tracker.live_by == "command" else None


class HarnessLauncher(Launcher):
    def __init__(self, n_jobs: Optional[int] = None, gpu_ids: Optional[List[int]] = None,
                 poll_seconds: float = 0.5, stop_timeout_s: float = 60.0, reuse_processes: bool = True) -> None:
        self.n_jobs, self.gpu_ids = n_jobs, None if gpu_ids is None else list(gpu_ids)
        self.reuse_processes = reuse_processes
        self.poll_seconds, self.stop_timeout_s = poll_seconds, stop_timeout_s
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context = config, hydra_context

    def _job(self, num: int, overrides: List[str], run_cfg):
        from harness.config.compose import quote_override
        from harness.launch.scheduler import Job

        run_dir = Path(str(self.config.hydra.sweep.dir)) / str(num)  # hydra.sweep.subdir: ${hydra.job.num}
        searchpath = [quote_override(str(path)) for path in self.config.hydra.searchpath]  # a user's config folder
        args = [
            *overrides, *([f"hydra.searchpath=[{','.join(searchpath)}]"] if searchpath else []),
            f"hydra.run.dir={quote_override(str(run_dir))}",
            "hydra.job_logging.root.handlers=[console]",  # the console is the run's train.log
        ]
        device = run_cfg.device
        warm = self.reuse_processes and device.gpus == 0 and not device.simulate_devices
        return Job(num=num, overrides=list(overrides), run_dir=run_dir,
                   command=[sys.executable, "-m", "harness", *args], gpus=device.gpus, devices=device.devices,
                   epochs=_expected_epochs(run_cfg), config=run_cfg.flat(), worker_args=args if warm else None,
                   backend=device.backend)

    def _run_configs(self, job_overrides: List[List[str]], initial_job_idx: int) -> list:
        """Each job's RunConfig: the command's plan's (harness.launch.plan), composed once before anything ran; for
        jobs another sweeper made, composed here the way Hydra composes a job."""
        from harness.config.compose import to_run_config
        from harness.launch.plan import handed

        plan = handed(Path(str(self.config.hydra.sweep.dir)))
        if plan is not None and initial_job_idx == 0 and plan.jobs == job_overrides:
            return list(plan.run_configs)
        configs = []
        for num, overrides in enumerate(job_overrides, start=initial_job_idx):
            sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = sweep_config.hydra.job.num = num
            configs.append(to_run_config(sweep_config))
        return configs

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from harness.launch import sweep_end
        from harness.launch.progress import terminal_progress
        from harness.launch.resources import default_parallelism, visible_gpus
        from harness.launch.scheduler import Scheduler
        from harness.store.run_files import run_result

        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")

        job_overrides = [list(overrides) for overrides in job_overrides]
        run_configs = self._run_configs(job_overrides, initial_job_idx)
        jobs = [self._job(initial_job_idx + i, overrides, run_cfg)
                for i, (overrides, run_cfg) in enumerate(zip(job_overrides, run_configs))]
        gpu_ids = visible_gpus() if self.gpu_ids is None else self.gpu_ids
        n_jobs = self.n_jobs or default_parallelism(len(jobs), gpu_ids)
        log.info(f"Launching {len(jobs)} jobs, {n_jobs} at a time, each in its own process"
                 + (f", on GPUs {gpu_ids}" if gpu_ids else " on CPU"))
        for job in jobs:
            log.info(f"\t#{job.num} : {' '.join(filter_overrides(job.overrides))}")
        watch = _tracking_watch(sweep_dir)  # tracking=mlflow: the runs logged from their files as they train
        scheduler = Scheduler(list(jobs), n_jobs, gpu_ids, poll_seconds=self.poll_seconds,
                              stop_timeout=self.stop_timeout_s, progress=terminal_progress(), watch=watch)
        scheduler.run(then=sweep_end.Interpolation(sweep_dir))  # in a warm worker: TensorFlow already loaded
        # Failures are in each run's run.json, which decides the exit code; a FAILED JobReturn would make
        # Hydra 1.3 raise here and skip the end-of-sweep report. The return value is the run's final val_acc,
        # what the task function returns in-process, so a sweeper that optimises it gets the metric. Each job's
        # own config is composed in its run process (its .hydra/); the sweep's stands in for it here.
        return [
            JobReturn(overrides=job.overrides, cfg=self.config, hydra_cfg=self.config, working_dir=str(job.run_dir),
                      task_name=str(self.config.hydra.job.name), status=JobStatus.COMPLETED,
                      _return_value=run_result(job.run_dir))
            for job in jobs
        ]
