"""Hydra launcher for `hydra/launcher=slurm` (conf/hydra/launcher/slurm.yaml): hydra-submitit-launcher's
SlurmLauncher, made to hold at thousands of runs.

- The jobs are the command's one plan (its sweep.json, harness.launch.plan), numbered as planned: a resume submits
  only the runs that have not finished (completed or diverged), each under its own job number and folder, not
  every task to skip itself in the queue.
- A sweep of more tasks than the cluster's MaxArraySize (SLURM's default is 1001) is cut into several arrays, and
  `array_parallelism` stays the throttle of the whole sweep: it is shared between the arrays. A study's round
  whose jobs run alone (a time measured on the machine: harness.studies.study.Round) runs one task at a time.
- Each task composes its own job inside SLURM, as the submitit launcher does; the submitting command composes
  nothing per job. What every task shares (this launcher, with the sweep's config and Hydra's state, about 50 KB)
  is written once per submission, not pickled into each task's file (SlurmTask): 10,000 tasks cost 10,000 small
  files, not half a gigabyte and 5 ms each.
"""

import logging
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf

log = logging.getLogger(__name__)
SLURM_MAX_ARRAY_SIZE = 1001  # SLURM's default MaxArraySize (slurm.conf(5)): array indices 0..1000


@dataclass
class HarnessSlurmConf(SlurmQueueConf):
    _target_: str = "hydra_plugins.harness_launcher.slurm.HarnessSlurmLauncher"
    # tasks in one array; null: the cluster's MaxArraySize (`scontrol show config`), else SLURM's default 1001
    max_array_size: Optional[int] = None


ConfigStore.instance().store(group="hydra/launcher", name="harness_slurm", node=HarnessSlurmConf, provider="harness")


def cluster_max_array_size() -> int:
    """The cluster's MaxArraySize, as `scontrol show config` says it; SLURM's default where it cannot be asked."""
    try:
        shown = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return SLURM_MAX_ARRAY_SIZE
    for line in shown.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "MaxArraySize" and value.strip().isdigit():
            return int(value.strip())
    return SLURM_MAX_ARRAY_SIZE


def runs_alone(sweep_dir: Path, numbers: list[int]) -> bool:
    """Whether the jobs `numbers` of the sweep's plan run alone (a study's round timed on the machine: sweep.json's
    `alone`)."""
    from harness.store import sweep_file

    return any(job.alone for job in sweep_file.planned_jobs(sweep_dir) or [] if job.num in numbers)


def cut_arrays(jobs: Sequence[Any], max_array_size: int, parallelism: int) -> tuple[list[list[Any]], int]:
    """`jobs` in arrays of at most `max_array_size` tasks, and each array's throttle (tasks at once), so that all
    the arrays together run at most `parallelism` tasks (at least one each)."""
    if max_array_size < 1:
        raise ValueError(f"max_array_size must be >= 1, got {max_array_size}")
    arrays = [list(jobs[i:i + max_array_size]) for i in range(0, len(jobs), max_array_size)]
    return arrays, max(1, parallelism // max(1, len(arrays)))


def not_finished(sweep_dir: Path, numbers: Sequence[int]) -> list[int]:
    """The job numbers whose run has not finished: no run.json, or one that is not completed or diverged, or damaged
    files (the run starts again)."""
    from harness.store.run_files import DONE, inspect_run

    left = []
    for num in numbers:
        record, damage = inspect_run(sweep_dir / str(num))
        if damage is not None or record is None or record.get("status") not in DONE:
            left.append(num)
    return left


class SlurmTask:
    """One array task: a run's job number and overrides, and the file holding the launcher it runs under (written
    once for all the tasks of a submission, with cloudpickle as submitit writes its own files)."""

    def __init__(self, shared: Path, num: int, overrides: List[str]) -> None:
        self.shared, self.num, self.overrides = Path(shared), num, list(overrides)

    def __call__(self) -> JobReturn:
        import cloudpickle

        with open(self.shared, "rb") as f:
            launcher, singleton_state = cloudpickle.load(f)
        return launcher(self.overrides, "hydra.sweep.dir", self.num, f"job_id_for_{self.num}", singleton_state)

    def checkpoint(self):
        """submitit's requeue at a time limit: the same task again; the run resumes from its last epoch."""
        import submitit

        return submitit.helpers.DelayedSubmission(self)


class HarnessSlurmLauncher(SlurmLauncher):
    harness_remote = True  # its runs go to the cluster's machines: this one's GPUs say nothing of theirs

    @classmethod
    def harness_check_config(cls, launcher_cfg) -> None:
        from harness.launch.preflight import check_slurm_arrays

        check_slurm_arrays(launcher_cfg)

    def __init__(self, max_array_size: Optional[int] = None, **params: Any) -> None:
        super().__init__(**params)
        self.max_array_size = max_array_size

    def _executor(self, throttle: int):
        """submitit's executor with this launcher's parameters: submitit's own names for the shared ones
        (BaseQueueConf), `slurm_`-prefixed for the rest."""
        import submitit

        shared = set(OmegaConf.structured(BaseQueueConf).keys())
        params = dict(self.params, array_parallelism=throttle)
        executor = submitit.AutoExecutor(cluster="slurm", folder=params.pop("submitit_folder"),
                                         slurm_max_num_timeout=params.pop("max_num_timeout"))
        executor.update_parameters(**{key if key in shared else f"slurm_{key}": value
                                      for key, value in params.items()})
        return executor

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        planned = {initial_job_idx + i: list(overrides) for i, overrides in enumerate(job_overrides)}
        left = not_finished(sweep_dir, list(planned))
        if len(left) < len(planned):
            log.info(f"{len(planned) - len(left)} of {len(planned)} runs already finished in {sweep_dir}: "
                     f"submitting the other {len(left)}")
        if not left:
            return []
        size = self.max_array_size or cluster_max_array_size()
        # a round timed on the machine (a study's jobs that run alone): one task at a time
        throttled = 1 if runs_alone(sweep_dir, list(planned)) else int(self.params.get("array_parallelism") or 1)
        arrays, throttle = cut_arrays(left, size, throttled)
        executor = self._executor(throttle)
        # submitit's folder up to its first %-pattern (sweep/.submitit/%j: sweep/.submitit)
        shared = self._share(Path(str(self.params["submitit_folder"]).split("%")[0]))
        jobs = []
        for numbers in arrays:
            log.info(f"Submitting {len(numbers)} runs (job {numbers[0]} to {numbers[-1]}) as one array, at most "
                     f"{throttle} at once")
            submitted = executor.submit_array([SlurmTask(shared, num, planned[num]) for num in numbers])
            jobs.extend(zip(numbers, submitted))
        return [self._result(num, planned[num], job, sweep_dir) for num, job in jobs]

    def _share(self, folder: Path) -> Path:
        """Write what every task of this submission runs under (this launcher, Hydra's state) once; its path."""
        import cloudpickle

        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"launcher-{uuid.uuid4().hex}.pkl"
        with open(path, "wb") as f:
            cloudpickle.dump((self, Singleton.get_state()), f)
        return path

    def _result(self, num: int, overrides: List[str], job, sweep_dir: Path) -> JobReturn:
        """The task's JobReturn; a task that ended without one (SLURM killed it, submitit gave up on it) is logged,
        and its run.json decides the exit code and the report, as for every run."""
        try:
            return job.results()[0]
        except Exception as err:  # submitit's UncompletedJobError, or the task's own exception
            log.warning(f"run {num} ended without a result ({type(err).__name__}: {str(err).splitlines()[0]})")
            return JobReturn(overrides=overrides, cfg=self.config, hydra_cfg=self.config,
                             working_dir=str(sweep_dir / str(num)), task_name=str(self.config.hydra.job.name),
                             status=JobStatus.COMPLETED, _return_value=None)
