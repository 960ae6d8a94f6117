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
    n_jobs: Optional[int] = None          # runs at once; null: runs_per_gpu per GPU for GPU runs, else one per CPU
                                          # core (memory allowing)
    runs_per_gpu: int = 1                 # GPU runs that share one GPU at once, each with its share of its memory
    gpu_ids: Optional[List[int]] = None   # GPUs to hand out; null: CUDA_VISIBLE_DEVICES, else nvidia-smi
    poll_seconds: float = 0.5
    stop_timeout_s: float = 60.0          # after Ctrl-C, how long runs get to record `interrupted`
    reuse_processes: bool = True          # CPU jobs in warm processes (TensorFlow imported once per slot)


ConfigStore.instance().store(group="hydra/launcher", name="harness", node=HarnessLauncherConf)


class HarnessLauncher(Launcher):
    # what the command reads before starting it (harness.launch.launchers): its runs train on this machine, and with
    # tracking=mlflow the command's tracking process logs them from their files (MLflow imported once, not per run)
    harness_remote = False
    harness_runs_log_themselves = False

    @classmethod
    def harness_check_config(cls, launcher_cfg) -> None:
        from harness.launch.preflight import check_n_jobs, check_runs_per_gpu

        check_n_jobs(launcher_cfg.get("n_jobs"))
        check_runs_per_gpu(launcher_cfg.get("runs_per_gpu", 1))

    def __init__(self, n_jobs: Optional[int] = None, gpu_ids: Optional[List[int]] = None,
                 poll_seconds: float = 0.5, stop_timeout_s: float = 60.0, reuse_processes: bool = True,
                 runs_per_gpu: int = 1) -> None:
        self.n_jobs, self.gpu_ids = n_jobs, None if gpu_ids is None else list(gpu_ids)
        self.runs_per_gpu = runs_per_gpu
        self.reuse_processes = reuse_processes
        self.poll_seconds, self.stop_timeout_s = poll_seconds, stop_timeout_s
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None
        self.warm: list = []  # a round's warm workers, kept for the study's next round (harness.launch.scheduler)

    def release(self) -> None:
        """Close the warm workers kept for a next round (the sweeper calls it once no round is left)."""
        while self.warm:
            self.warm.pop().close()

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context = config, hydra_context

    def _job(self, planned):
        """The scheduler's Job for a job of the plan (harness.store.sweep_file.PlannedJob)."""
        from harness.config.compose import quote_override
        from harness.launch.scheduler import Job

        run_dir = Path(str(self.config.hydra.sweep.dir)) / planned.job  # hydra.sweep.subdir: ${hydra.job.num}
        searchpath = [quote_override(str(path)) for path in self.config.hydra.searchpath]  # a user's config folder
        args = [
            *planned.overrides, *([f"hydra.searchpath=[{','.join(searchpath)}]"] if searchpath else []),
            f"hydra.run.dir={quote_override(str(run_dir))}",
            "hydra.job_logging.root.handlers=[console]",  # the console is the run's train.log
        ]
        # a run timed alone starts in a process of its own, cold, as the command a study prints for it would: a warm
        # worker's earlier runs leave its first compiled call cheaper (measured: 0.37 s against 0.46 s at batch 128)
        warm = self.reuse_processes and planned.gpus == 0 and not planned.simulate_devices and not planned.alone
        return Job(num=planned.num, overrides=list(planned.overrides), run_dir=run_dir,
                   command=[sys.executable, "-m", "harness", *args], gpus=planned.gpus,
                   devices=None if planned.devices is None else tuple(planned.devices), epochs=planned.epochs,
                   config=lambda: self._run_config(planned.num, planned.overrides).identity(),
                   worker_args=args if warm else None, backend=planned.backend, steps=planned.steps)

    def _run_config(self, num: int, overrides: List[str]):
        """A job's RunConfig, composed the way Hydra composes a job."""
        from harness.config.compose import to_run_config

        sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = sweep_config.hydra.job.num = num
        return to_run_config(sweep_config)

    def _planned(self, job_overrides: List[List[str]], initial_job_idx: int) -> list:
        """The jobs as the command planned them (its sweep.json), composed once before anything ran; jobs another
        sweeper made are composed here, the way Hydra composes a job."""
        from harness.launch.plan import planned_job
        from harness.store import sweep_file

        planned = {job.num: job for job in sweep_file.planned_jobs(Path(str(self.config.hydra.sweep.dir))) or []}
        numbers = range(initial_job_idx, initial_job_idx + len(job_overrides))
        if all(num in planned for num in numbers) and [planned[num].overrides for num in numbers] == job_overrides:
            return [planned[num] for num in numbers]  # the command's plan, or a round of it (harness.launch.rounds)
        return [planned_job(num, overrides, self._run_config(num, overrides))
                for num, overrides in enumerate(job_overrides, start=initial_job_idx)]

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from harness.launch import sweep_end
        from harness.launch.progress import terminal_progress
        from harness.launch.resources import alone_parallelism, default_parallelism, visible_gpus
        from harness.launch.scheduler import Scheduler
        from harness.store import sweep_file
        from harness.store.run_files import run_result

        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")

        planned = self._planned([list(o) for o in job_overrides], initial_job_idx)
        jobs = [self._job(job) for job in planned]
        later = {job.round for job in planned if job.round > 1}
        gpu_ids = visible_gpus() if self.gpu_ids is None else self.gpu_ids
        gpu_jobs = any(job.gpus > 0 for job in jobs)
        alone = any(job.alone for job in planned)  # a study's time measured on the machine: nothing beside it
        runs_per_gpu = 1 if alone else self.runs_per_gpu
        n_jobs = alone_parallelism(jobs, gpu_ids) if alone else \
            self.n_jobs or default_parallelism(len(jobs), gpu_ids, gpu_jobs, runs_per_gpu)
        shared = f", up to {runs_per_gpu} on each" if runs_per_gpu > 1 else ""
        log.info(f"Launching {len(jobs)} jobs, {n_jobs} at a time, each in its own process"
                 + (f", on GPUs {gpu_ids}{shared}" if gpu_ids and gpu_jobs else " on CPU")
                 + (", each alone on its devices (a time measured)" if alone else ""))
        for job in jobs:
            log.info(f"\t#{job.num} : {' '.join(filter_overrides(job.overrides))}")
        # the interpolation in a warm worker (TensorFlow already loaded); a study in rounds cannot tell its last
        # round before it ends, so the sweep's end (harness.launch.sweep_end.close) makes it, in a process of its own
        last = not sweep_file.more_rounds(sweep_file.read(sweep_dir))
        if alone:  # a time measured on the machine: no other process of the sweep beside it, not even an idle one
            self.release()
        warm, self.warm, hand_over = self.warm, [], not last and not alone
        scheduler = Scheduler(list(jobs), n_jobs, gpu_ids, poll_seconds=self.poll_seconds,
                              stop_timeout=self.stop_timeout_s, progress=terminal_progress(),
                              label="".join(f"round {r} · " for r in sorted(later)),
                              runs_per_gpu=runs_per_gpu, warm=warm, hand_over=hand_over)
        scheduler.run(then=sweep_end.Interpolation(sweep_dir) if last else None)
        self.warm = list(scheduler.idle) if hand_over else []  # the next round starts warm
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
