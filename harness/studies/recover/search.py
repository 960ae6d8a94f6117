"""+study=recover's search read from its runs on the search's seed: each trial (a Sobol point, a rule, a guided
recipe, and b's own with recover.tune_small) with its status and final tune_acc, and, for a Sobol point, its
tune_acc at each rung it paused at and the rung where it was cut.

The rungs (successive halving, Li et al. 2020): round 1's Sobol trials pause at the first rung epoch
(pause_epoch, pause_when=cheaper: only where the pause saves time; else a trial runs whole, with the same numbers),
the better `recover.keep` of them by tune_acc at that epoch go on, and the round after each rung continues those
that paused from their checkpoints (a forked run: harness.store.fork), to the next rung or to E. Every trial is at
the same epoch, so at the same fraction of its planned steps, where it is compared: a decaying schedule has not
decayed more in one trial than in another. Which trials go on is read from their tune_acc at the rungs alone, so it
is the same whether a trial paused or ran whole. A trial is its furthest run: the latest job of its arm on the
search's seed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.assess.analysis import SELECTION_COLUMNS
from harness.assess.sweep import Sweep
from harness.studies.recover import settings
from harness.studies.recover.space import recipe_of_job

FINISHED = ("completed", "diverged")
PAUSED = "paused"  # a trial stopped at a rung: continued in the next round, or cut there
SMALL = "small_"  # the arm of a trial at b (recover.tune_small): small_trial_<k>
GUIDED = "guided"  # a trial's source: proposed by the guided round (harness.studies.recover.guided)


@dataclass
class Trial:
    number: int
    recipe: dict[str, Any]
    status: str                 # its furthest run's status, or "not started"
    tune_acc: float | None      # its final tuning-slice accuracy (None: not finished, diverged, or cut at a rung)
    peak_lr: float | None = None  # the learning rate its schedule peaks at, as its run recorded it
    source: str = "sobol"       # sobol (a point of the search), rule (a published rule's recipe), guided
    rule: str | None = None     # the rule's name (harness.config.rules), for a rule's trial
    clipped: list[str] = field(default_factory=list)  # what the rule asked that was clipped
    rungs: dict[int, float] = field(default_factory=dict)  # a Sobol trial's tune_acc at each rung epoch it reached
    cut_at: int | None = None   # the rung epoch where the better part went on without it
    paused: dict[int, str] = field(default_factory=dict)  # rung epoch -> the job of its run paused there

    @property
    def changed(self) -> int:
        """How many keys the recipe sets (a null choice keeps the command's own): the simpler, the fewer."""
        return sum(value is not None for value in self.recipe.values())


def rung_rounds(plan: dict[str, Any]) -> int:
    """The rounds after round 1 that continue the search's trials, one a rung (a plan before the rungs has none)."""
    return len(plan.get("rungs") or [])


def last_rows(df: pd.DataFrame, statuses: tuple[str, ...] = FINISHED) -> pd.DataFrame:
    """Each run's last epoch (through SELECTION_COLUMNS, its job and epoch only: never the validation set), for
    the runs whose status is one of `statuses`."""
    columns = [c for c in (*SELECTION_COLUMNS, "job", "epoch") if c in df.columns]
    rows = df[columns]
    rows = rows[rows["status"].isin(statuses) & rows["epoch"].notna()]
    return rows.sort_values("epoch").groupby("run_id").tail(1)


def read(sweep: Sweep, plan: dict[str, Any]) -> tuple[list[Trial], int | None, list[Trial], int | None]:
    """(the trials at B, the best of them, b's trials with recover.tune_small, the best of those)."""
    later = (sweep.plan or {}).get("jobs", [])
    rungs, after = plan.get("rungs") or [], 2 + rung_rounds(plan)
    continued = [job for job in later if 2 <= job.get("round", 1) < after]
    guided_jobs = [job for job in later if settings.recorded(plan).guided and job.get("round") == after]
    arm_of = {**plan["arms"], **{job["job"]: job["arm"] for job in (*continued, *guided_jobs)}}
    first = plan["seeds"][0]
    frame = sweep.epochs
    frame = frame[(frame["seed"] == first) & frame["status"].isin((*FINISHED, PAUSED)) & frame["epoch"].notna()]
    rows = {str(row["job"]): row for row in last_rows(frame, (*FINISHED, PAUSED)).to_dict("records")}
    # a trial's tune_acc at each epoch whose training loss was finite: the epoch a run diverged in still measured
    # its tuning slice (weights of NaN predict one class), a value no rung may compare
    trained = frame[np.isfinite(frame["train_loss"].astype(float))] if "train_loss" in frame else frame
    at_epoch = {(str(job), int(epoch)): tune for job, epoch, tune in zip(trained["job"], trained["epoch"],
                                                                          trained["tune_acc"]) if not pd.isna(tune)}
    runs: dict[str, list[dict[str, Any]]] = {}  # arm -> its runs' records, in job order: the last is the furthest
    for record in sorted((r for r in sweep.records if str(r["job"]) in arm_of), key=lambda r: int(r["job"])):
        runs.setdefault(arm_of[str(record["job"])], []).append(record)

    def trials(recipes: list[dict[str, Any]], prefix: str, sources: list[dict[str, Any]]) -> list[Trial]:
        found = []
        for k, (recipe, source) in enumerate(zip(recipes, sources)):
            records = runs.get(f"{prefix}trial_{k}", [])
            status = records[-1]["status"] if records else "not started"
            row = rows.get(str(records[-1]["job"]), {}) if records else {}
            searched = prefix == "" and source.get("source", "sobol") == "sobol"
            at: dict[int, float] = {}  # from the first run that reached the epoch (a continued run holds a copy)
            for r in records:
                for e in rungs if searched else ():
                    if (str(r["job"]), e) in at_epoch:
                        at.setdefault(e, float(at_epoch[(str(r["job"]), e)]))
            paused = {int(rows[str(r["job"])]["epoch"]): str(r["job"]) for r in records
                      if r["status"] == PAUSED and str(r["job"]) in rows}
            found.append(Trial(k, recipe, status, _number(row.get("tune_acc")) if status == "completed" else None,
                               _number(row.get("peak_lr")), source.get("source", "sobol"), source.get("rule"),
                               list(source.get("clipped", [])), at, None, paused))
        return found

    base = next((job["overrides"] for job in later if job["job"] == plan["reference"]["B"][str(first)]), [])
    recipes = [*plan["trials"], *(recipe_of_job(job["overrides"], base, plan["space"]) for job in guided_jobs)]
    sources = [*(plan.get("sources") or [{} for _ in plan["trials"]]), *({"source": GUIDED} for _ in guided_jobs)]
    at_b = plan.get("small_trials", [])
    found, small = trials(recipes, "", sources), trials(at_b, SMALL, [{} for _ in at_b])
    _cut(found, rungs, settings.recorded(plan).keep, sweep.complete_rounds())
    return found, _best(found), small, _best(small)


def selected(trials: list[Trial], rungs: list[int], keep: float) -> list[list[int]]:
    """The trials that go on past each rung: at rung i, ceil(keep x the trials that ran towards it), the best by
    tune_acc at its epoch of those that reached it (a trial that diverged on the way, or in that epoch, has no value
    there; ties: the lower number); the first rung's entrants are the Sobol trials, each later rung's the ones the
    rung before chose.
    The counts halve from the number of Sobol trials whatever diverged, so a resume counts the same."""
    entrants = [t for t in trials if t.source == "sobol"]
    count, chosen = len(entrants), []
    for epoch in rungs:
        count = math.ceil(keep * count)
        entrants = sorted((t for t in entrants if epoch in t.rungs), key=lambda t: (-t.rungs[epoch], t.number))
        entrants = entrants[:count]
        chosen.append([t.number for t in entrants])
    return chosen


def _cut(trials: list[Trial], rungs: list[int], keep: float, ended: int) -> None:
    """Marks the trials each rung left behind (cut_at, and no final tune_acc), once the round that brought its
    entrants to it has ended (round 1 for the first rung, the round after it for the next): those with a tune_acc
    there (one that diverged or failed on the way keeps its status). A trial that ran whole (its pause did not pay)
    is cut all the same: which trials go on never depends on the machine's speed."""
    entrants = [t.number for t in trials if t.source == "sobol"]
    for index, chosen in enumerate(selected(trials, rungs, keep)):
        if ended < 1 + index:
            return
        for number in entrants:  # one that diverged or failed before the rung keeps its status (never cut)
            if number not in chosen and rungs[index] in trials[number].rungs:
                trials[number].cut_at, trials[number].tune_acc = rungs[index], None
        entrants = chosen


def _best(trials: list[Trial]) -> int | None:
    return next((t.number for t in sorted(trials, key=lambda t: (-(t.tune_acc or -1.0), t.number))
                 if t.tune_acc is not None), None)


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
