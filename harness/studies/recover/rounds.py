"""+study=recover's later rounds, planned from the rounds before (harness.launch.rounds runs the mechanics): round 2
confirms the best trials on the other seeds; from round 3 on, the budget, one length a round."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.assess import sweep as sweep_files
from harness.studies.recover import plan as recover
from harness.studies.recover import reading as recovery
from harness.studies.recover.verdict import RECOVERED
from harness.studies.study import NOT_ENDED


def next_round(sweep_dir: Path, content: dict[str, Any], round_: int) -> list[tuple[list[str], str]] | str | None:
    """Round `round_`'s jobs (next_jobs), read from the sweep's files; NOT_ENDED while a run of the round before
    has not ended."""
    reading = recovery.recover(sweep_files.read(sweep_dir))
    if reading.rounds < round_ - 1:
        return NOT_ENDED
    return next_jobs(content, reading, round_)


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
