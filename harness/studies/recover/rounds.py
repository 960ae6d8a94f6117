"""+study=recover's later rounds, planned from the rounds before (harness.launch.rounds runs the mechanics): a round
a rung, each continuing the better part of the search's paused trials (recover.rungs), then the guided trials
(recover.guided > 0), then the confirmation of the best trials and the rules on the other seeds, then the judging
of the chosen recipe on fresh seeds (recover.judge > 0), then the budget, one length a round."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.assess import sweep as sweep_files
from harness.studies.recover import guided, search, settings
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
    return next_jobs(content, reading, round_, sweep_dir)


def next_jobs(content: dict[str, Any], reading: recovery.Recovery, round_: int,
              sweep_dir: Path | None = None) -> list[tuple[list[str], str]] | None:
    """Round `round_`'s jobs as (overrides, arm), [] for a round with none, None when the study is done: with
    recover.rungs, a round a rung continues the better part of the paused trials, as (overrides, arm, the job
    continued); with recover.guided > 0, the next round proposes the guided trials from the search's (and writes
    the Optuna study to `sweep_dir`); the confirmation round then runs the best trials and every rule on the other
    seeds; after it,
    unless the recipe's recovery of b's accuracy is shown (or recover.budget=false), one length of the budget a round,
    until B reaches b's tuning accuracy or (B/b)E: an undecided verdict, or a recovered one on one seed, still
    measures what B would need."""
    record = content["recover"]
    jobs = {job["job"]: job["overrides"] for job in content["jobs"]}
    extra, rungs = recovery.guided_rounds(record), record.get("rungs") or []
    if 2 <= round_ < 2 + len(rungs):  # the better part of the trials paused at the rung before continue
        index = round_ - 2
        chosen = search.selected(reading.trials, rungs, settings.recorded(record).keep)[index]
        return recover.rung_jobs(record, jobs, [(k, reading.trials[k].paused[rungs[index]]) for k in chosen
                                                if rungs[index] in reading.trials[k].paused], index + 1)
    search_rounds = 1 + len(rungs)
    finished = [(t.number, t.recipe, t.source, t.tune_acc) for t in reading.trials
                if t.status in recovery.FINISHED and t.cut_at is None]
    cut = [(t.number, t.recipe, t.source, t.cut_at, t.rungs[t.cut_at]) for t in reading.trials
           if t.cut_at is not None]
    if extra and round_ == search_rounds + 1:  # told the search's trials only (a resumed sweep's reading holds the
        first = [trial for trial in finished if trial[0] < len(record["trials"])]  # guided ones too)
        if sweep_dir is not None:
            guided.write(sweep_dir, record, first, cut)
        return recover.guided_jobs(record, jobs, guided.propose(record, first, settings.recorded(record).guided, cut))
    if round_ == search_rounds + 1 + extra:
        if extra and sweep_dir is not None:  # the study again, with the guided trials told
            guided.write(sweep_dir, record, finished, cut)
        confirm = settings.recorded(record).confirm
        ranked = reading.to_confirm(confirm)
        small = [t.number for t in sorted(reading.small_trials, key=lambda t: (-(t.tune_acc or -1.0), t.number))
                 if t.tune_acc is not None][:confirm]
        if not ranked or (reading.small_trials and not small):
            return None
        recipes = [t.recipe for t in reading.trials]
        return recover.confirm_jobs(record, jobs, ranked, recipes) + (
            recover.confirm_jobs(record, jobs, small, [t.recipe for t in reading.small_trials], small=True)
            if small else [])
    judging = recovery.judging_rounds(record)
    if judging and round_ == search_rounds + 2 + extra:  # the recipe chosen: judged on seeds that did not choose it
        if reading.recipe is None:
            return None
        small = None if reading.small_recipe is None else (
            reading.small_recipe, reading.small_trials[reading.small_recipe].recipe)
        return recover.judge_jobs(record, jobs, reading.recipe, reading.trials[reading.recipe].recipe, small)
    verdict = reading.planned_verdict  # on the seeds the study judged on: seeds added later change no round
    if verdict is None or (verdict.kind == RECOVERED and verdict.shown) or not settings.recorded(record).budget:
        return None
    lengths = recover.budget_lengths(record)
    index = round_ - search_rounds - 2 - extra - judging
    before = lengths[:index]  # the rounds before this one: a resumed sweep's reading holds later ones too
    if index >= len(lengths) or any(length.reached for length in [*reading.budget, *reading.budget_rule]
                                    if length.epochs in before):
        return None
    rule = reading.budget_rule_trial
    return recover.budget_jobs(record, jobs, reading.trials[reading.recipe].recipe, lengths[index],
                               None if rule is None else (rule, reading.trials[rule].recipe))


def added_jobs(sweep_dir: Path, content: dict[str, Any], new: list[int]) -> list[tuple[list[str], str]] | str:
    """`python -m harness.resume SWEEP --add-seeds N`: on each seed of `new` the judging round's three runs, b (or
    b's own recipe), B as it is and the recipe, as (overrides, arm), so that the verdict pairs them beside the fresh
    seeds that judged (the search, the confirmation and the budget do not run again); or why there are none."""
    record = content["recover"]
    if not recovery.judging_rounds(record):
        return "an older sweep, judged on the seeds that chose its recipe; run the study again with recover.judge"
    found = recovery.recover(sweep_files.read(sweep_dir))
    if found is None or found.recipe is None or found.verdict is None:
        return "no recipe judged yet; resume the sweep first"
    planned = {job["job"]: job["overrides"] for job in content["jobs"]}
    small = None if found.small_recipe is None else (found.small_recipe,
                                                     found.small_trials[found.small_recipe].recipe)
    return recover.judge_jobs(record, planned, found.recipe, found.trials[found.recipe].recipe, small, new)
