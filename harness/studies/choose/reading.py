"""+study=choose read from its files: the target (choose.target, or b's lowest final tune_acc over the baseline's
seeds less choose.tolerance), and at every batch size each candidate's steps to it, seed by seed, counted as
harness.assess.targets counts them (a run that missed it, or diverged, never reached it). The candidate a batch
size goes on with is the one with the fewest steps on the first seed, the seed that chooses; the other seeds judge
(the times, the speed-up and the check use only them, so the luck that picked a candidate does not count in its
favour); validation plays no part in any choice. A grid point raced out (it passed its batch size's leader by
choose.race_margin: settings.RACED_OUT) has no steps but is no miss: it is never a leader, a best or the answer, and
the page says where it stopped. A run stopped at the cap (choose.cap_factor x b's samples) missed the target. Files
in, numbers and sentences out."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import pandas as pd

from harness.assess import targets
from harness.assess.sweep import Sweep
from harness.studies.choose import answer as answer_of
from harness.studies.choose import files, ramps, timed_runs, timing, words
from harness.studies.choose.settings import BASELINE, RACED_OUT, RAMPS, arm, recorded, size_name
from harness.studies.choose.timed_runs import Check


@dataclass
class Candidate:
    size: int
    name: str                   # as_is, a rule's name, or a grid point's (linear_x2)
    recipe: dict[str, Any]      # keyed as overrides; {} is the command as it is
    steps: dict[int, float]     # seed -> steps to the target (inf: missed it)
    tune_acc: dict[int, float]  # seed -> the final tune_acc (where it stopped, or at the cap)
    val_acc: dict[int, float | None] = field(default_factory=dict)   # seed -> val_acc at the target
    seconds: dict[int, float | None] = field(default_factory=dict)   # seed -> seconds_to_target (target.json's)
    status: dict[int, str] = field(default_factory=dict)             # seed -> its run's status
    jobs: dict[int, str] = field(default_factory=dict)               # seed -> its run's job
    samples: dict[int, float] = field(default_factory=dict)          # seed -> samples to the target (inf: none)
    stopped_at: dict[int, int] = field(default_factory=dict)         # seed -> where a raced-out run stopped (samples)

    @property
    def arm(self) -> str:
        return arm(self.size, self.name)

    def reached_on(self, seed: int) -> bool:
        return math.isfinite(self.steps.get(seed, math.inf))

    def raced_out(self, seed: int) -> bool:
        """It stopped on `seed` once its samples passed its batch size's leader's by race_margin: not a miss."""
        return self.status.get(seed) == RACED_OUT

    def steps_text(self, seed: int) -> str:
        """Its steps to the target on `seed` in words: a number, "missed", or where it was raced out."""
        if self.raced_out(seed):
            return f"raced out at {self.stopped_at[seed]:,} samples"
        steps = self.steps[seed]
        return f"{steps:.0f}" if math.isfinite(steps) else "missed"


@dataclass
class Choice:
    target: float | None         # None: not known yet (the baseline has not ended), or cannot be (target_note)
    target_note: str
    sizes: list[int]
    seeds: list[int]
    candidates: dict[int, list[Candidate]]
    rounds: int                  # rounds whose every job has ended
    tolerance: float = 0.01      # choose.tolerance
    rates: dict[tuple[int, str], list[timing.Rate]] = field(default_factory=dict)  # (size, candidate): each timed
    # run's, alone, in the seeds' order
    machine: str = ""            # where the timing ran: "2 CPU cores, TensorFlow"
    checks: list[Check] = field(default_factory=list)
    answer: answer_of.Answer | None = None
    command: str | None = None   # the answer as a command line: its batch size and recipe on the user's command
    base_command: str | None = None  # b as it is, as the same command line (what the speed-up is over)
    lr_grid: tuple[float, ...] = ()   # choose.lr_grid: a best at its edge was tuned only partly
    check_tolerance: float = 0.25     # choose.check_tolerance
    check: bool = True                # choose.check: the printed command rerun on a seed of its own
    timing: dict[tuple[int, str], str] = field(default_factory=dict)  # (size, candidate) -> its timed run's status,
    # or TOO_FEW_CHECKS where it completed with too few checks to fit a time
    proposal: Any = None         # the ramp proposed from the curves (proposal.Proposal), once they are known
    ramp_note: str = ""          # why no ramp is proposed
    smith_note: str = ""         # why Smith's rule gives no ramp
    seesaw_note: str = ""        # why Seesaw gives no ramp
    ramp_fitted: str = ""        # what was changed in the proposal to fit the command (its warm-up shortened)
    ramp_not_carried: dict[int, dict[str, Any]] = field(default_factory=dict)  # ramps.not_carried's, by batch
    refused: dict[str, str] = field(default_factory=dict)  # a ramp's name -> why its runs could not be planned (the
    # round's planning refused them: sweep.json's `refused`)
    ramp_recipes: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)  # name -> (its first phase's
    # batch, its recipe): the ramps to confirm and time
    cap_samples: int | None = None   # where a run that has not reached the target stops (choose.cap_factor x b's)
    b_samples: int | None = None     # the samples b needed on its slowest baseline seed (at an epoch's end)
    train_size: int | None = None    # the runs' training samples an epoch
    time_epochs: int | None = None   # choose.time_epochs: where a timed run of one batch size stopped
    planned: dict[int, set[str]] = field(default_factory=dict)  # size -> the candidates round 1 listed (no grid)

    @property
    def ramps(self) -> list[Candidate]:
        """The candidates whose batch grows (settings.RAMPS), at their first phase's batch."""
        return [c for size in self.sizes for c in self.candidates.get(size, []) if c.name in RAMPS]

    @property
    def choosing(self) -> list[int]:
        """The seed that chooses each batch size's candidate: the first."""
        return self.seeds[:1]

    @property
    def judging(self) -> list[int]:
        """The seeds that judge the chosen candidates: every other one (with one seed, that seed: no claim stands on
        one seed)."""
        return self.seeds[1:] or self.seeds[:1]

    @property
    def headline(self) -> str:
        return words.headline(self)

    def as_json(self) -> dict[str, Any]:
        """choice.json's content (files.FIELDS)."""
        return files.values(self)

    def leader(self, size: int, listed: bool = False) -> Candidate | None:
        """The candidate `size` goes on with: the fewest steps to the target on the first seed; where none reached
        it, the highest final tune_acc there (the grid then looks around the closest); None without runs. Never a
        ramp, nor a run raced out. `listed`: among the candidates round 1 listed only (the grid's centre and race:
        the same once the grid has run, so a resumed command plans the grid as before)."""
        seed = self.seeds[0]
        ran = [c for c in self.candidates.get(size, []) if seed in c.steps and c.name not in RAMPS
               and not c.raced_out(seed) and (not listed or c.name in self.planned.get(size, ()))]
        if not ran:
            return None
        reached = [c for c in ran if c.reached_on(seed)]
        if reached:
            return min(reached, key=lambda c: (c.steps[seed], len(c.recipe), c.name))
        return max(ran, key=lambda c: (c.tune_acc.get(seed, -1.0), -len(c.recipe)))

    def best(self, size: int) -> Candidate | None:
        """The leader, where it reached the target on the first seed (the one a confirmation runs), else None."""
        found = self.leader(size)
        return found if found is not None and found.reached_on(self.seeds[0]) else None


def read_plan(sweep: Sweep) -> dict[str, Any] | None:
    """sweep.json's choice plan, or None for any other sweep."""
    return (sweep.plan or {}).get("choose")


def arms(sweep: Sweep) -> dict[str, str]:
    return sweep.arms((read_plan(sweep) or {}).get("arms", {}))


def target_of(sweep: Sweep, record: dict[str, Any], jobs: dict[str, str]) -> tuple[float | None, str]:
    """(the target, how it was set): choose.target, else b's lowest final tune_acc over the baseline's seeds less
    choose.tolerance, once every baseline run completed (None with the reason until then, or when one did not)."""
    settings = recorded(record)
    if record["target"] is not None:
        return float(record["target"]), f"choose.target={record['target']:g}"
    baseline = [job for job, name in jobs.items() if name == BASELINE]
    status = {str(r["job"]): r.get("status") for r in sweep.records}
    if any(status.get(job) not in ("completed", "diverged", "failed") for job in baseline):
        return None, "The baseline (batch {b} as it is, on every seed) has not ended: no target yet.".format(
            b=record["small_batch"])
    if any(status.get(job) != "completed" for job in baseline):
        return None, (f"A baseline run of batch {record['small_batch']} did not complete, so no target can be set "
                      "from it: give choose.target, or resume the sweep to run it again.")
    finals = _finals(sweep.epochs, baseline)["tune_acc"]
    lowest = float(finals.min())
    target = float(f"{lowest - settings.tolerance:.4g}")
    cut = target > lowest  # rounded up past what a seed of b reached (a tolerance near 0)
    if cut:
        target = _cut_to_four_digits(lowest)
    return target, (f"batch {record['small_batch']}'s lowest final tune_acc over its {len(finals)} seeds, "
                    f"{lowest:.4g}, less choose.tolerance {settings.tolerance:g}"
                    + (f" (cut to {target:.4g}, which every seed reached)" if cut else ""))


def _cut_to_four_digits(value: float) -> float:
    """`value` cut, not rounded, to 4 significant digits: a target every seed of b reached, as every run records it
    (plan.target_jobs writes it to 4)."""
    exact = Decimal(repr(value))
    return float(exact.quantize(Decimal(1).scaleb(exact.adjusted() - 3), rounding=ROUND_FLOOR))


def _finals(df: pd.DataFrame, jobs: list[str]) -> pd.DataFrame:
    """Each job's last epoch row."""
    mine = df[df["job"].astype(str).isin(jobs) & df["epoch"].notna()]
    return mine.sort_values("epoch", kind="stable").groupby("job").tail(1).set_index("job")


def _recipe(record: dict[str, Any], size: int, name: str) -> dict[str, Any] | None:
    """The recipe of candidate `name` at `size`: a planned candidate's, or a grid point's (<candidate>_x<factor>:
    its learning rate x factor)."""
    planned = {c["name"]: c["recipe"] for c in record["candidates"].get(str(size), [])}
    if name in planned:
        return dict(planned[name])
    base, _, factor = name.rpartition("_x")
    if base not in planned:
        return None
    recipe = dict(planned[base])
    recipe["lr_factor"] = grid_lr(recipe, record, float(factor))
    return recipe


def grid_lr(recipe: dict[str, Any], record: dict[str, Any], factor: float) -> float:
    """A candidate's lr_factor x `factor` (the command's own lr_factor where the candidate keeps it)."""
    return float(f"{recipe.get('lr_factor', record['lr_factor']) * factor:.4g}")


def choose(sweep: Sweep, added: bool = True) -> Choice | None:
    """The choice so far of a +study=choose sweep (None for any other). `added`: the seeds added later
    (--add-seeds) judge too; without them, the choice the command's own seeds make, which the rounds are planned
    from (so that seeds added after a look change no round)."""
    record = read_plan(sweep)
    if record is None:
        return None
    jobs = arms(sweep)
    target, note = target_of(sweep, record, jobs)
    df = sweep.epochs
    timed = targets.runs(sweep, df)
    timed["arm"] = timed["job"].astype(str).map(jobs)
    finals = _finals(df, [job for job, name in jobs.items() if name != BASELINE])
    found: dict[int, dict[str, Candidate]] = {}
    sizes = [int(s) for s in record["sizes"]]
    seeds = [*(int(s) for s in record["seeds"]), *(sweep.added_seeds() if added else [])]
    found_choice = Choice(target, note, sizes, seeds, {}, sweep.complete_rounds(),
                          recorded(record).tolerance, lr_grid=recorded(record).lr_grid,
                          time_epochs=recorded(record).time_epochs, check=recorded(record).check,
                          planned={int(size): {c["name"] for c in listed}
                                   for size, listed in record["candidates"].items()})
    if "train_size" in df and df["train_size"].notna().any():
        found_choice.train_size = int(df["train_size"].dropna().iloc[0])
    found_choice.b_samples, found_choice.cap_samples = _cap(df, record, jobs, target, found_choice.train_size)
    ramp_recipes: dict[str, dict[str, Any] | None] = {}
    for ramps_too in (False, True):  # the ramps' recipes come from the other candidates' runs
        if ramps_too:
            found_choice.candidates = {size: list(found.get(size, {}).values()) for size in sizes}
            ramp_recipes = ramps.read(sweep, found_choice, record)
        for row in timed.to_dict("records"):
            size, name = size_name(row["arm"])
            if size is None or (name in RAMPS) != ramps_too:
                continue
            recipe = ramp_recipes.get(name) if ramps_too else _recipe(record, size, name)
            if recipe is not None:
                _add_run(found.setdefault(size, {}), size, name, recipe, row, finals, found_choice.cap_samples)
        for r in sweep.records:  # a failed run has no steps, but its candidate says it failed
            size, name = size_name(jobs.get(str(r["job"])))
            if size is None or (name in RAMPS) != ramps_too or r.get("status") != "failed":
                continue
            recipe = ramp_recipes.get(name) if ramps_too else _recipe(record, size, name)
            if recipe is not None and (r.get("config") or {}).get("seed") is not None:
                c = found.setdefault(size, {}).setdefault(name, Candidate(size, name, recipe, {}, {}))
                c.status.setdefault(int(r["config"]["seed"]), "failed")
    found_choice.candidates = {size: list(found.get(size, {}).values()) for size in sizes}
    timed_runs.read(sweep, found_choice, jobs, timed)
    return found_choice


def _cap(df: pd.DataFrame, record: dict[str, Any], jobs: dict[str, str], target: float | None,
         train_size: int | None) -> tuple[int | None, int | None]:
    """(the training samples b needed on its slowest baseline seed, at the end of the epoch in which it first
    reached the target; choose.cap_factor x those, where a target run that has not reached it stops), None without
    a baseline (choose.target given), a target or a cap."""
    factor = recorded(record).cap_factor
    baseline = [job for job, name in jobs.items() if name == BASELINE]
    if target is None or not baseline or train_size is None or "tune_acc" not in df:
        return None, None
    rows = df[df["job"].astype(str).isin(baseline) & df["epoch"].notna()]
    reached = rows[rows["tune_acc"] >= target].groupby(rows["job"].astype(str))["epoch"].min()
    if len(reached) < len(baseline):
        return None, None
    needed = int(reached.max()) * train_size
    return needed, None if factor is None else math.ceil(factor * needed)


def _add_run(found: dict[str, Candidate], size: int, name: str, recipe: dict[str, Any], row: dict, finals,
             cap: int | None = None):
    """A target run of candidate `name` at `size`: its steps, final tune_acc, val_acc at the target, seconds,
    status and job on its seed; a run stopped short below the cap (`cap`: choose.cap_factor's samples) was raced
    out, one stopped at it missed."""
    seed = int(row["seed"])
    c = found.setdefault(name, Candidate(size, name, recipe, {}, {}))
    c.steps[seed] = math.inf if row["steps"] is None or pd.isna(row["steps"]) else float(row["steps"])
    c.samples[seed] = math.inf if row["samples"] is None or pd.isna(row["samples"]) else float(row["samples"])
    tune = finals["tune_acc"].get(str(row["job"])) if "tune_acc" in finals else None
    c.tune_acc[seed] = float(tune) if tune is not None and not pd.isna(tune) else math.nan
    c.val_acc[seed] = None if row["val_acc"] is None or pd.isna(row["val_acc"]) else float(row["val_acc"])
    c.seconds[seed] = None if row["seconds"] is None or pd.isna(row["seconds"]) else float(row["seconds"])
    c.status[seed] = str(row["status"])
    c.jobs[seed] = str(row["job"])
    limit = row.get("max_samples")
    if row.get("stopped_short") and limit is not None and not pd.isna(limit) and (cap is None or limit < cap):
        c.status[seed], c.stopped_at[seed] = RACED_OUT, int(limit)
