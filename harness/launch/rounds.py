"""A study that plans in rounds (+study=recover): round r+1's jobs from round r's files, appended to the sweep's one
plan (sweep.json) before they run.

The harness sweeper (hydra_plugins/harness_sweeper) launches round 1, the command's own plan, then asks `plan_next`
for the next round until there is none. What a round holds is decided from the runs' files only (the reading of
harness.assess.recovery: the trials ranked on the tuning slice, the verdict, the budget reached), and each job is
composed by the caller's `compose` (inside Hydra: its config loader; no second Hydra), so the same files plan the
same round: a killed command, run again, finishes round r's missing runs and plans round r+1 as before, its jobs
keeping their numbers (and their finished runs). A round that has no job (round 2 with one seed) is passed over.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from harness.assess import recovery
from harness.assess import sweep as sweep_files
from harness.assess.recovery_verdict import RECOVERED
from harness.config import recover
from harness.config.schema import RunConfig
from harness.launch.plan import planned_job
from harness.store import sweep_file
from harness.store.sweep_file import PlannedJob

Compose = Callable[[list[str]], RunConfig]


def next_jobs(content: dict[str, Any], reading: recovery.Recovery, round_: int) -> list[tuple[list[str], str]] | None:
    """Round `round_`'s jobs as (overrides, arm), [] for a round with none, None when the study is done: round 2
    confirms the best trials on the other seeds; from round 3 on, unless the recipe recovered b's accuracy (or
    recover.budget=false), one length of the budget a round, until B reaches b's tuning accuracy or (B/b)E."""
    record = content["recover"]
    jobs = {job["job"]: job["overrides"] for job in content["jobs"]}
    if round_ == 2:
        ranked = [t.number for t in reading.ranked() if t.tune_acc is not None]
        small = [t.number for t in sorted(reading.small_trials, key=lambda t: (-(t.tune_acc or -1.0), t.number))
                 if t.tune_acc is not None]
        if not ranked or (reading.small_trials and not small):
            return None
        return recover.confirm_jobs(record, jobs, ranked) + (
            recover.confirm_jobs(record, jobs, small, small=True) if small else [])
    verdict = reading.verdict
    if verdict is None or verdict.kind == RECOVERED or not record["settings"].get("budget", True):
        return None
    lengths = recover.budget_lengths(record)
    index = round_ - 3
    before = lengths[:index]  # the rounds before this one: a resumed sweep's reading holds later ones too
    if index >= len(lengths) or any(length.reached for length in reading.budget if length.epochs in before):
        return None
    return recover.budget_jobs(record, jobs, reading.recipe, lengths[index])


def plan_next(sweep_dir: Path, done: int, compose: Compose) -> list[PlannedJob]:
    """After round `done` has ended: the next round with jobs, written to sweep.json and returned; [] when the
    study has no round left (sweep.json then says so: `more_rounds` false), or when a run of round `done` has not
    ended (still marked running: a resume runs it, then plans the next round)."""
    sweep_dir = Path(sweep_dir)
    content = sweep_file.read(sweep_dir)
    round_ = done
    while sweep_file.more_rounds(content):
        reading = recovery.recover(sweep_files.read(sweep_dir))
        if reading.rounds < round_:  # a run of it has not ended (a SLURM task killed): it is resumed first
            return []
        round_ += 1
        found = next_jobs(content, reading, round_)
        if found is None:
            content = {**_before(content, round_), "more_rounds": False, "rounds": round_ - 1}
        else:
            content = _with_round(sweep_dir, content, round_, found, compose)
        sweep_file.write(sweep_dir, content)
        if found:
            return [PlannedJob(**job) for job in content["jobs"] if job.get("round", 1) == round_]
    return []


def _before(content: dict[str, Any], round_: int) -> dict[str, Any]:
    return {**content, "jobs": [job for job in content["jobs"] if job.get("round", 1) < round_]}


def _with_round(sweep_dir: Path, content: dict[str, Any], round_: int, found: list[tuple[list[str], str]],
                compose: Compose) -> dict[str, Any]:
    """`content` with round `round_`'s jobs: where it had planned that round the same before (the same jobs, configs
    and arms in the same order: a resumed command) as it was, with the rounds after it that it had planned, else
    in place of those, numbered after every job and run folder there is."""
    earlier = [job for job in content["jobs"] if job.get("round", 1) == round_]
    first = sweep_file.next_number(sweep_dir, content)
    new = [planned_job(first + i, overrides, compose(overrides), round_, arm) for i, (overrides, arm) in
           enumerate(found)]
    if [(job.overrides, job.config, job.arm) for job in new] == \
            [(job["overrides"], job["config"], job.get("arm")) for job in earlier]:
        return {**content, "rounds": max(round_, int(content.get("rounds", 1)))}
    kept = _before(content, round_)
    return {**kept, "jobs": [*kept["jobs"], *(sweep_file.as_record(job) for job in new)], "rounds": round_}
