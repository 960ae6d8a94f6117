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

Every job a study proposes is planned as a user's command is (`compose`: its config validated, its batches planned)
before its round is written. A job that cannot run is not planned: sweep.json's `refused` names its round, arm and
the one-line error, which the study's reading puts on its page, and a resume plans the same round the same way. A
round the study itself cannot plan (a ConfigError from its `next_round`) ends the study there: sweep.json's
`stopped` says why, the command says it in one line with exit 2 (harness.launch.cli), and a resume plans no more.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any, Callable

from harness.config.schema import RunConfig
from harness.fields import ConfigError
from harness.launch.plan import planned_job
from harness.store import fork, sweep_file
from harness.store.sweep_file import PlannedJob
from harness.studies import registry
from harness.studies.study import NOT_ENDED, Round

Compose = Callable[[list[str]], RunConfig]
REFUSED, STOPPED = sweep_file.REFUSED, sweep_file.STOPPED


def plan_next(sweep_dir: Path, done: int, compose: Compose) -> list[PlannedJob]:
    """After round `done` has ended: the next round with jobs, written to sweep.json and returned; [] when the
    study has no round left (sweep.json then says so: `more_rounds` false), or when a run of round `done` has not
    ended (still marked running: a resume runs it, then plans the next round)."""
    sweep_dir = Path(sweep_dir)
    content = sweep_file.read(sweep_dir)
    study = registry.find((content or {}).get("study"), registry.recorded_paths(content))
    round_ = done
    while sweep_file.more_rounds(content) and study is not None:
        try:
            found = study.next_round(sweep_dir, content, round_ + 1)
        except ConfigError as err:  # the study cannot plan it: the study ends here, and says why
            sweep_file.write(sweep_dir, {**_before(content, round_ + 1), "more_rounds": False, "rounds": round_,
                                         STOPPED: {"round": round_ + 1, "error": str(err)}})
            return []
        if found == NOT_ENDED:  # a run of round `round_` has not ended (a SLURM task killed): it is resumed first
            return []
        round_ += 1
        if found is None:
            content = {**_before(content, round_), "more_rounds": False, "rounds": round_ - 1}
        else:
            found = found if isinstance(found, Round) else Round(found)
            content = _with_round(sweep_dir, content, round_, found, compose)
        sweep_file.write(sweep_dir, content)
        planned = [PlannedJob(**job) for job in content["jobs"] if job.get("round", 1) == round_] if found else []
        if planned:  # a round none of whose jobs could be planned is passed over, as one with none
            for job in planned:  # before any runs: every launcher then resumes it as an interrupted run
                if job.continues is not None:
                    fork.fork(sweep_dir / job.continues, sweep_dir / job.job)
            return planned
    return []


def _before(content: dict[str, Any], round_: int) -> dict[str, Any]:
    """`content` with the jobs (and the refusals) of the rounds before `round_` only."""
    return {**content, "jobs": [job for job in content["jobs"] if job.get("round", 1) < round_],
            REFUSED: [r for r in content.get(REFUSED, []) if r["round"] < round_]}


def _planned(sweep_dir: Path, content: dict[str, Any], round_: int, found: Round,
             compose: Compose) -> tuple[list[PlannedJob], list[dict[str, Any]]]:
    """The round's jobs, each composed and planned as a user's command is, numbered after every job and run folder
    there is; and those that could not be planned, with their one-line error (a warning line each)."""
    first, new, refusals = sweep_file.next_number(sweep_dir, content), [], []
    for overrides, arm, *continues in found.jobs:
        try:
            config = compose(overrides)
        except ConfigError as err:
            refusals.append({"round": round_, "arm": arm, "overrides": list(overrides), "error": str(err)})
            print(f"harness: warning: round {round_}'s {arm or 'job'} is not run, it cannot be planned: {err}",
                  file=sys.stderr)
            continue
        new.append(dataclasses.replace(planned_job(first + len(new), overrides, config, round_, arm),
                                       alone=found.alone, continues=continues[0] if continues else None))
    return new, refusals


def _with_round(sweep_dir: Path, content: dict[str, Any], round_: int, found: Round,
                compose: Compose) -> dict[str, Any]:
    """`content` with round `round_`'s jobs: where it had planned that round the same before (the same jobs, configs
    and arms in the same order: a resumed command) as it was, with the rounds after it that it had planned, else
    in place of those, numbered after every job and run folder there is."""
    earlier = [job for job in content["jobs"] if job.get("round", 1) == round_]
    new, refusals = _planned(sweep_dir, content, round_, found, compose)
    if [(job.overrides, job.config, job.arm, job.alone, job.continues) for job in new] == \
            [(job["overrides"], job["config"], job.get("arm"), job.get("alone", False), job.get("continues"))
             for job in earlier]:
        known = content.get(REFUSED, [])
        return {**content, "rounds": max(round_, int(content.get("rounds", 1))),
                REFUSED: [*known, *(r for r in refusals if r not in known)]}
    kept = _before(content, round_)
    return {**kept, "jobs": [*kept["jobs"], *(sweep_file.as_record(job) for job in new)], "rounds": round_,
            REFUSED: [*kept[REFUSED], *refusals]}
