"""A study that plans in rounds: round r+1's jobs from round r's files, appended to the sweep's one plan (sweep.json)
before they run.

The harness sweeper (hydra_plugins/harness_sweeper) launches round 1, the command's own plan, then asks `plan_next`
for the next round until there is none. What a round holds the study decides from the runs' files only (its
`next_round`), and each job is composed by the caller's `compose` (inside Hydra: its config loader; no second
Hydra), so the same files plan the same round: a killed command, run again, finishes round r's missing runs and
plans round r+1 as before, its jobs keeping their numbers (and their finished runs). A round that has no job (round
2 with one seed) is passed over. A study may ask for a round's jobs to run alone (a Round with `alone`: a time
measured on the machine), which the launchers honour; a job may continue an earlier job's paused run (pause_epoch),
whose files are copied to its folder here, before any launcher runs it (harness.store.fork).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from harness.config.schema import RunConfig
from harness.launch.plan import planned_job
from harness.store import fork, sweep_file
from harness.store.sweep_file import PlannedJob
from harness.studies import registry
from harness.studies.study import NOT_ENDED, Round

Compose = Callable[[list[str]], RunConfig]


def plan_next(sweep_dir: Path, done: int, compose: Compose) -> list[PlannedJob]:
    """After round `done` has ended: the next round with jobs, written to sweep.json and returned; [] when the
    study has no round left (sweep.json then says so: `more_rounds` false), or when a run of round `done` has not
    ended (still marked running: a resume runs it, then plans the next round)."""
    sweep_dir = Path(sweep_dir)
    content = sweep_file.read(sweep_dir)
    study = registry.find((content or {}).get("study"), registry.recorded_paths(content))
    round_ = done
    while sweep_file.more_rounds(content) and study is not None:
        found = study.next_round(sweep_dir, content, round_ + 1)
        if found == NOT_ENDED:  # a run of round `round_` has not ended (a SLURM task killed): it is resumed first
            return []
        round_ += 1
        if found is None:
            content = {**_before(content, round_), "more_rounds": False, "rounds": round_ - 1}
        else:
            found = found if isinstance(found, Round) else Round(found)
            content = _with_round(sweep_dir, content, round_, found, compose)
        sweep_file.write(sweep_dir, content)
        if found and found.jobs:
            planned = [PlannedJob(**job) for job in content["jobs"] if job.get("round", 1) == round_]
            for job in planned:  # before any runs: every launcher then resumes it as an interrupted run
                if job.continues is not None:
                    fork.fork(sweep_dir / job.continues, sweep_dir / job.job)
            return planned
    return []


def _before(content: dict[str, Any], round_: int) -> dict[str, Any]:
    return {**content, "jobs": [job for job in content["jobs"] if job.get("round", 1) < round_]}


def _with_round(sweep_dir: Path, content: dict[str, Any], round_: int, found: Round,
                compose: Compose) -> dict[str, Any]:
    """`content` with round `round_`'s jobs: where it had planned that round the same before (the same jobs, configs
    and arms in the same order: a resumed command) as it was, with the rounds after it that it had planned, else
    in place of those, numbered after every job and run folder there is."""
    earlier = [job for job in content["jobs"] if job.get("round", 1) == round_]
    first = sweep_file.next_number(sweep_dir, content)
    new = [dataclasses.replace(planned_job(first + i, overrides, compose(overrides), round_, arm), alone=found.alone,
                               continues=continues[0] if continues else None)
           for i, (overrides, arm, *continues) in enumerate(found.jobs)]
    if [(job.overrides, job.config, job.arm, job.alone, job.continues) for job in new] == \
            [(job["overrides"], job["config"], job.get("arm"), job.get("alone", False), job.get("continues"))
             for job in earlier]:
        return {**content, "rounds": max(round_, int(content.get("rounds", 1)))}
    kept = _before(content, round_)
    return {**kept, "jobs": [*kept["jobs"], *(sweep_file.as_record(job) for job in new)], "rounds": round_}
