"""A command's one plan: every job it runs (its overrides and validated RunConfig), where, and under which launcher.

The command line makes it once (harness.config.compose expands the command and composes each structure once;
the study the command names adds its own jobs through its `plan`, harness.studies.study.Study) and writes it to the sweep folder's sweep.json
(harness.store.sweep_file) before Hydra starts. Hydra instantiates its sweeper and launcher from config and gives
them only overrides; they read that file and run its jobs as they are (hydra_plugins/harness_sweeper,
hydra_plugins/harness_launcher): no job is expanded or composed a second time, and sweep.json records exactly what
runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.schema import RunConfig
from harness.launch.launchers import LauncherTraits
from harness.store import layout, sweep_file
from harness.store.run_files import config_hash
from harness.store.sweep_file import PlannedJob
from harness.tracking.settings import Tracking


@dataclass(frozen=True)
class CommandPlan:
    jobs: list[list[str]]   # each job's task overrides, in job order
    output_dir: Path        # the sweep folder, or the run folder of a single run
    launcher: LauncherTraits
    run_configs: list[RunConfig]
    study: dict[str, Any] = field(default_factory=dict)  # what a study planned beside the jobs (a diagnosis)
    tracking: Tracking | None = None  # tracking=mlflow: where the runs are tracked
    study_name: str | None = None     # the study preset the command named (+study=...)
    study_paths: list[str] = field(default_factory=list)  # the folders of a user's own studies (--config-dir)

    def planned_jobs(self) -> list[PlannedJob]:
        return [planned_job(num, job, cfg) for num, (job, cfg) in enumerate(zip(self.jobs, self.run_configs))]

    def sweep_record(self) -> dict[str, Any]:
        """sweep.json: every job of the command (its overrides, its config's fingerprint for a resume to compare,
        what its launcher needs), the study's name and what it planned."""
        paths = {"study_paths": self.study_paths} if self.study_paths else {}
        return sweep_file.record(self.planned_jobs(), self.study_name, {**self.study, **paths})

    def write(self) -> None:
        """sweep.json in the output folder, before any job runs; a resumed sweep keeps the later rounds it had
        planned from the same round 1 (harness.launch.rounds plans them again, the same, keeping their numbers)."""
        earlier = sweep_file.read(self.output_dir) if (self.output_dir / layout.SWEEP_FILE).exists() else None
        sweep_file.write(self.output_dir, sweep_file.keep_later_rounds(self.sweep_record(), earlier))


def planned_job(num: int, overrides: list[str], cfg: RunConfig, round_: int = 1,
                arm: str | None = None) -> PlannedJob:
    device = cfg.device
    return PlannedJob(job=str(num), overrides=list(overrides), config=config_hash(cfg.identity()), round=round_,
                      arm=arm, gpus=device.gpus, devices=None if device.devices is None else list(device.devices),
                      simulate_devices=device.simulate_devices, backend=device.backend,
                      **dict(zip(("epochs", "steps"), expected_work(cfg))))


def expected_work(run_cfg: RunConfig) -> tuple[int, int | None]:
    """(epochs the run will train (a step budget decides them from the batch size), for the progress line's ETA;
    its optimizer steps, by which the launcher starts the longest runs first), the steps None where unknown."""
    from harness.config.batching import plan_batches, plan_schedule
    from harness.data.registry import expected_train_size

    train = run_cfg.train
    try:
        size = expected_train_size(run_cfg.data, train.imbalance, train.train_fraction, train.tune_fraction)
        if size is None:  # known only once the data are loaded (a TFDS set not prepared yet)
            return train.epochs, None
        plan = plan_batches(train.batch_size, train.per_replica_batch, max(run_cfg.device.gpus, 1), size,
                            backend=run_cfg.device.backend)
        schedule = plan_schedule(plan, train)
        if train.pause_epoch is not None:  # it stops there
            return train.pause_epoch, train.pause_epoch * plan.steps_per_epoch
        return schedule.epochs, schedule.total_steps or schedule.epochs * plan.steps_per_epoch
    except ValueError:  # the run itself will report it
        return train.epochs, None
