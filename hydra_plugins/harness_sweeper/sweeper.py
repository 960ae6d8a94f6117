"""Hydra sweeper `harness`: the jobs a multirun runs are the plan its command made, not a second expansion.

`python -m harness ... -m` expands the command, composes and validates every job, and adds the jobs a study
computes from the command itself (+study=diagnose's arms, from the user's batch sizes, epochs and data) before
Hydra starts (harness.launch.cli.plan_command), and writes them to the sweep folder's sweep.json
(harness.launch.plan). Hydra's basic sweeper would then expand the command again, and could not compute those arms
at all: this sweeper reads the plan's jobs from that file and hands them to the launcher as they are, in one
batch. `hydra.sweeper.params` keeps its meaning: the command line planner reads it.
"""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.errors import HydraException
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

log = logging.getLogger(__name__)


@dataclass
class HarnessSweeperConf:
    _target_: str = "hydra_plugins.harness_sweeper.sweeper.HarnessSweeper"
    # key -> comma-separated values, swept with the command's own (studies set them: conf/study/)
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="harness", node=HarnessSweeperConf)


class HarnessSweeper(Sweeper):
    def __init__(self, params: Optional[Dict[str, str]] = None) -> None:
        self.params = params or {}
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None
        self.launcher = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context = config, hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(hydra_context=hydra_context,
                                                                task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:
        """Round 1, the command's plan; then, for a study that plans in rounds, each next round planned from the
        files of the one before (harness.launch.rounds), until the study has none left."""
        from harness.launch import rounds
        from harness.store import sweep_file

        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        planned = sweep_file.planned_jobs(sweep_dir)
        if planned is None:
            raise HydraException(f"the harness sweeper runs the plan its command made ({sweep_dir}/sweep.json, "
                                 "which is not there): start a sweep with `python -m harness OVERRIDES -m`")
        jobs, round_, returns = [job for job in planned if job.round == 1], 1, []
        log.info(f"Sweep {sweep_dir}: {len(jobs)} jobs, as planned")
        try:
            while jobs:
                for numbered in _consecutive(jobs):  # a launch numbers its jobs from its first: one per stretch
                    returns.append(self.launcher.launch([job.overrides for job in numbered],
                                                        initial_job_idx=numbered[0].num))
                jobs = rounds.plan_next(sweep_dir, round_, self._compose)
                if jobs:
                    round_ = jobs[0].round
                    log.info(f"Round {round_} of {sweep_dir}: {len(jobs)} jobs, planned from the rounds before")
        finally:  # the warm workers a round kept for the next: none is left
            getattr(self.launcher, "release", lambda: None)()
        return returns

    def _compose(self, overrides: List[str]):
        """A later round's job composed and validated as Hydra composes a job (its config loader: no second
        Hydra in this process)."""
        from omegaconf import open_dict

        from harness.config.compose import to_run_config

        config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(config):
            config.hydra.job.id = config.hydra.job.num = 0
        return to_run_config(config)


def _consecutive(jobs: list) -> list[list]:
    """The jobs in stretches of consecutive numbers: seeds added to a study's sweep (harness.resume --add-seeds) are
    round 1's too, numbered after its later rounds."""
    stretches: list[list] = []
    for job in jobs:
        if stretches and job.num == stretches[-1][-1].num + 1:
            stretches[-1].append(job)
        else:
            stretches.append([job])
    return stretches
