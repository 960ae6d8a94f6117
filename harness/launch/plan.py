"""A command's one plan: every job it runs (its overrides and validated RunConfig), and where.

The command line makes it once (harness.config.compose expands the command and composes each structure once;
harness.config.diagnose adds a diagnosis's arms) and hands it to Hydra's sweeper and launcher in the same process
(hydra_plugins/harness_sweeper, hydra_plugins/harness_launcher), which run it as it is: no job is expanded or
composed a second time, and sweep.json records exactly what runs. Hydra instantiates its plugins from config and
gives them only overrides, so the plan crosses that boundary here, keyed by the folder the command writes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.schema import RunConfig
from harness.store.run_files import config_hash
from harness.tracking.settings import Tracking


@dataclass(frozen=True)
class CommandPlan:
    jobs: list[list[str]]   # each job's task overrides, in job order
    output_dir: Path        # the sweep folder, or the run folder of a single run
    launcher: str           # the launcher's class path
    run_configs: list[RunConfig]
    study: dict[str, Any] = field(default_factory=dict)  # what a study planned beside the jobs (a diagnosis)
    tracking: Tracking | None = None  # tracking=mlflow: where the runs are tracked

    def sweep_record(self) -> dict[str, Any]:
        """sweep.json: every job of the command (its overrides, and its config's fingerprint for a resume to
        compare), and what its study planned, written before any job runs."""
        return {"jobs": [{"job": str(num), "overrides": job, "config": config_hash(cfg.flat())}
                         for num, (job, cfg) in enumerate(zip(self.jobs, self.run_configs))], **self.study}


_handed: dict[Path, CommandPlan] = {}


def hand_over(plan: CommandPlan) -> None:
    """Make `plan` the one Hydra's sweeper and launcher run for its output folder, in this process."""
    _handed[Path(plan.output_dir).resolve()] = plan


def handed(output_dir: Path) -> CommandPlan | None:
    """The plan handed over for `output_dir`, or None (Hydra driven some other way: compose as Hydra would)."""
    return _handed.get(Path(str(output_dir)).resolve())
