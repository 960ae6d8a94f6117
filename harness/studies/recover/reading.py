"""+study=recover read from its files, round by round: the drop between b and B as they are and the search's trials
ranked on the tuning slice (round 1, its rungs and the guided round: harness.studies.recover.search), the best
confirmed on the other seeds and the verdict on validation, the epochs B needs to reach b's tuning accuracy (the
last rounds). Files in, numbers and sentences out.

The plan (sweep.json's `recover`, harness.studies.recover.plan) names each round-1 job's arm: `as_is`, or `trial_<k>`,
the k-th recipe in Sobol order, at B on the command's first seed; a later round's job carries its own arm (the
trial it confirms at another seed, `budget_<epochs>`). The trials are ranked, and the confirmed one chosen, by
final tune_acc read through SELECTION_COLUMNS only (as +study=tuned chooses its learning rates): the validation
set, which the verdict compares on, never enters a choice. Each round is read once every job of it has ended; until
then the reading says what is missing and claims nothing of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from harness.assess.analysis import BATCH, num_classes
from harness.assess.paired import Estimate, estimate
from harness.assess.sweep import Sweep
from harness.store import sweep_file
from harness.studies.recover import budget, choice, commands, search, settings
from harness.studies.recover import verdict as recovery_verdict
from harness.studies.recover import notes as recovery_notes
from harness.studies.recover import words as recovery_words
from harness.studies.recover.importance import Importances, importances
from harness.studies.recover.search import FINISHED, SMALL, Trial, rung_rounds
from harness.studies.recover.budget import Length
from harness.studies.recover.verdict import Verdict

AS_IS = "as_is"


@dataclass
class Recovery:
    small_batch: int
    large_batch: int
    epochs: int
    seeds: list[int]
    drop: Estimate | None   # v(b) - v(B) as they are, on validation, paired over seeds
    reference: dict[str, float | None]      # tune_acc of b and B as they are, at the search's seed
    trials: list[Trial]
    best: int | None
    command: str | None
    headline: str
    notes: list[str] = field(default_factory=list)
    rounds: int = 0                              # the rounds whose every job has ended
    confirmed: list[tuple[int, float | None, int]] = field(default_factory=list)  # (trial, mean tune_acc, seeds)
    recipe: int | None = None                    # the confirmed trial with the best mean tune_acc
    verdict: Verdict | None = None
    budget: list[Length] = field(default_factory=list)
    budget_rule_trial: int | None = None         # the best confirmed rule, run beside a recipe that is not one
    budget_rule: list[Length] = field(default_factory=list)  # its lengths
    small_tune: float | None = None              # b's mean tune_acc over the seeds (not those added): the budget's aim
    budget_asked: bool = True
    importance: Importances | None = None        # what mattered in the search (with_importance)
    small_trials: list[Trial] = field(default_factory=list)  # recover.tune_small: b's own search
    small_confirmed: list[tuple[int, float | None, int]] = field(default_factory=list)
    small_recipe: int | None = None              # b's confirmed recipe: what B is compared with
    chance: float | None = None                  # 1 / the number of classes
    more_seeds: str | None = None                # undecided: the command that runs the study on the seeds it needs
    judged: list[int] = field(default_factory=list)  # the seeds the verdict pairs: fresh ones (recover.judge), never
    # one that chose the recipe, and those added later (--add-seeds); an older sweep's, the seeds that chose
    left_out: dict[int, str] = field(default_factory=dict)  # a judging seed the verdict could not pair -> whose
    # run there has no final validation accuracy (not finished, failed or diverged)
    planned_verdict: Verdict | None = None       # the verdict on the seeds the study judged on, none added: what
    # plans the budget, so that a resume after seeds were added plans the study's rounds as before

    @property
    def small_arm(self) -> str | None:
        """The arm b is compared as: its own recipe's (recover.tune_small), or None for b as it is."""
        return None if self.small_recipe is None else f"{SMALL}trial_{self.small_recipe}"

    def ranked(self) -> list[Trial]:
        """The finished trials, best tune_acc first, then those cut at a rung (the later rung first, then the better
        tune_acc there), then the others in trial order."""
        done = sorted((t for t in self.trials if t.tune_acc is not None), key=lambda t: (-t.tune_acc, t.number))
        cut = sorted((t for t in self.trials if t.tune_acc is None and t.cut_at is not None),
                     key=lambda t: (-t.cut_at, -t.rungs[t.cut_at], t.number))
        return done + cut + [t for t in self.trials if t.tune_acc is None and t.cut_at is None]

    def to_confirm(self, confirm: int) -> list[int]:
        """The trials the confirmation runs on the other seeds (harness.studies.recover.choice.to_confirm)."""
        return choice.to_confirm(self.ranked(), confirm)

    def as_json(self) -> dict[str, Any]:
        """recovery.json's content (harness.studies.recover.files.FIELDS)."""
        from harness.studies.recover.files import values

        return values(self)


def judging_rounds(plan: dict[str, Any]) -> int:
    """1 where the recipe is judged on fresh seeds (recover.judge > 0), in the round after the confirmation; 0 in an
    older sweep, whose verdict paired the seeds that chose (the budget's first round comes this much later)."""
    return 1 if settings.recorded(plan).judge else 0


def guided_rounds(plan: dict[str, Any]) -> int:
    """1 where the round after the rungs' is the guided round (recover.guided > 0), else 0: the confirmation comes
    this much later (a plan made before the guided round has none)."""
    return 1 if settings.recorded(plan).guided else 0


def read_plan(sweep: Sweep) -> dict[str, Any] | None:
    """sweep.json's recovery plan, or None for any other sweep."""
    return (sweep.plan or {}).get("recover")


def arms(sweep: Sweep) -> dict[str, str]:
    """Job number -> arm of every job the plan has so far: round 1's from the recovery plan, later rounds' their own."""
    return sweep.arms((read_plan(sweep) or {}).get("arms", {}))


def selection(df: pd.DataFrame) -> pd.DataFrame:
    """What the trials are ranked on: each finished run's last epoch, through SELECTION_COLUMNS (and its job) only."""
    return search.last_rows(df, FINISHED)


def _done(df: pd.DataFrame) -> pd.DataFrame:
    """The epochs of the runs that finished."""
    return df[df["status"].isin(FINISHED) & df["epoch"].notna()]


def _val_finals(df: pd.DataFrame) -> pd.DataFrame:
    return _done(df).sort_values("epoch").groupby("run_id").tail(1)


def recover(sweep: Sweep) -> Recovery | None:
    """The reading of a +study=recover sweep (None for any other), from the runs finished so far."""
    plan = read_plan(sweep)
    if plan is None:
        return None
    df, b, big, first = sweep.epochs, plan["small_batch"], plan["large_batch"], plan["seeds"][0]
    arm_of = arms(sweep)
    df = df.assign(arm=df["job"].map(lambda job: arm_of.get(str(job))))
    chosen = selection(df).assign(arm=lambda f: f["job"].map(lambda j: arm_of.get(str(j))))
    search_rounds = 1 + rung_rounds(plan)  # round 1 and a round a rung
    extra = guided_rounds(plan)
    later = (sweep.plan or {}).get("jobs", [])
    trials, best, small_trials, small_best = search.read(sweep, plan)
    as_is = chosen[chosen["arm"] == AS_IS]
    reference = {name: _number(as_is.loc[(as_is[BATCH] == size) & (as_is["seed"] == first), "tune_acc"].max())
                 for name, size in (("b", b), ("B", big))}
    drop = _drop(df, b, big, plan["seeds"])
    found = Recovery(b, big, plan["epochs"], list(plan["seeds"]), drop, reference, trials, best, None, "",
                     rounds=sweep.complete_rounds(), budget_asked=settings.recorded(plan).budget,
                     small_trials=small_trials)
    own = as_is[~as_is["seed"].isin(sweep_file.added_seeds(sweep.plan))]  # what the budget aims at: seeds added
    found.small_tune = _number(own.loc[own[BATCH] == b, "tune_acc"].mean())  # after a look plan nothing
    found.chance = 1.0 / num_classes(df)
    if found.rounds >= search_rounds + 1 + extra and best is not None and (small_best is not None or not small_trials):
        confirming = [job["arm"] for job in later if job.get("round") == search_rounds + 1 + extra]
        seeds = len(plan["seeds"])
        tolerance = settings.recorded(plan).tolerance
        choosing = chosen[chosen["seed"].isin(plan["seeds"])]  # the judging seeds' runs never choose
        found.confirmed, found.recipe = _confirmed(choosing, confirming, "", trials, seeds, tolerance)
        if small_trials:  # b's own recipe, confirmed the same way: what B is compared with
            found.small_confirmed, found.small_recipe = _confirmed(choosing, confirming, SMALL, small_trials, seeds,
                                                                   tolerance)
            found.small_tune = _with_failures(choosing.loc[choosing["arm"] == found.small_arm, "tune_acc"].dropna(),
                                              seeds)
        judging = judging_rounds(plan)
        found.judged = [*settings.judging_seeds(plan), *sweep.added_seeds()] if judging else \
            list(plan["seeds"])
        if found.rounds >= search_rounds + 1 + extra + judging:
            _judge(sweep, found, df, chosen, plan, arm_of)
    found.command = commands.recipe_command(sweep, plan, found.recipe if found.recipe is not None else best)
    found.headline, found.notes = recovery_words.headline(found), recovery_notes.notes(found, plan)
    return found


def _judge(sweep: Sweep, found: Recovery, df: pd.DataFrame, chosen: pd.DataFrame, plan: dict[str, Any],
           arm_of: dict[str, str]) -> None:
    """The verdict on the judging seeds, the seeds that would decide an undecided one, and the budget so far."""
    b = found.small_batch
    found.verdict, found.left_out = _verdict(found, _val_finals(df), plan, found.judged)
    fresh = settings.judging_seeds(plan) if judging_rounds(plan) else found.judged
    found.planned_verdict = found.verdict if fresh == found.judged else \
        _verdict(found, _val_finals(df), plan, fresh)[0]
    if found.verdict is not None and found.verdict.kind == recovery_verdict.UNDECIDED:
        found.more_seeds = commands.add_seeds(sweep.folder, len(found.judged), found.verdict.seeds_needed) \
            if judging_rounds(plan) else commands.more_seeds(sweep, plan["seeds"], found.verdict.seeds_needed)
    done = {job["job"] for job in (sweep.plan or {}).get("jobs", []) if job.get("round", 1) <= found.rounds}
    found.budget_rule_trial = budget.best_rule(found)
    ended, speeds = {j: a for j, a in arm_of.items() if j in done}, budget.speeds(_done(df))
    small = speeds.loc[speeds["arm"] == found.small_arm, "speed"] if found.small_arm else \
        speeds.loc[(speeds["arm"] == AS_IS) & (speeds["batch"] == b), "speed"]
    at_b = _number(small.mean()) if len(small) else None
    found.budget = budget.lengths(found, chosen, speeds, plan, ended, at_b)
    if found.budget_rule_trial is not None:
        found.budget_rule = budget.lengths(found, chosen, speeds, plan, ended, at_b,
                                           f"_trial_{found.budget_rule_trial}")


def _confirmed(chosen: pd.DataFrame, confirming: list[str], prefix: str, trials: list[Trial], seeds: int,
               tolerance: float) -> tuple[list[tuple[int, float | None, int]], int | None]:
    """The confirmed trials (those round 2 ran at the other seeds) with their mean tune_acc over every seed (a seed
    that failed or diverged counts as 0, as +study=tuned counts it) and how many finished, and the recipe: the
    simplest of them within `tolerance` of the best mean (simplest), or with one seed (no round-2 job) the simplest
    of the search's finished trials within it of the best."""
    confirmed = []
    for arm in dict.fromkeys(a for a in confirming if a.startswith(f"{prefix}trial_")):
        values = chosen.loc[chosen["arm"] == arm, "tune_acc"].dropna()
        confirmed.append((int(arm.rsplit("_", 1)[1]), _with_failures(values, seeds), len(values)))
    candidates = [(k, tune) for k, tune, _ in confirmed if tune is not None] if confirmed else \
        [(t.number, t.tune_acc) for t in trials if t.tune_acc is not None]
    return confirmed, choice.simplest(candidates, trials, tolerance)


def _verdict(r: Recovery, finals: pd.DataFrame, plan: dict[str, Any],
             seeds: list[int]) -> tuple[Verdict | None, dict[int, str]]:
    """The verdict on validation over the judging `seeds` where b, B as it is and the recipe all finished, and each
    seed left out with whose run there has no final val_acc."""
    arm = f"trial_{r.recipe}"
    finals = finals[finals["seed"].isin(seeds)]
    small = r.small_arm or str(r.small_batch)  # b's own recipe where b got the search, else b as it is
    rows = finals[finals["arm"].isin([arm, r.small_arm]) | ((finals["arm"] == AS_IS) & finals[BATCH].isin(
        [r.small_batch, r.large_batch]))]
    whole = rows.assign(column=rows["arm"].where(rows["arm"] != AS_IS, rows[BATCH].map(str))).pivot_table(
        index="seed", columns="column", values="val_acc", aggfunc="first")
    names = [small, str(r.large_batch), arm]
    whole = whole.reindex(index=sorted(set(seeds)), columns=names)
    table = whole.dropna()
    words = {small: f"batch {r.small_batch} with its recipe" if r.small_arm else f"batch {r.small_batch} as it is",
             str(r.large_batch): f"batch {r.large_batch} as it is", arm: f"the recipe ({arm.replace('_', ' ')})"}
    left_out = {int(seed): ", ".join(words[name] for name in names if pd.isna(whole.loc[seed, name]))
                for seed in whole.index if seed not in table.index}
    if table.empty:
        return None, left_out
    tolerance = settings.recorded(plan).tolerance
    return recovery_verdict.judge(*(table[name].to_numpy() for name in names), tolerance), left_out


def with_importance(found: Recovery | None) -> Recovery | None:
    """The reading with the knobs' importance over its finished trials (a few seconds of forests: for the report,
    not for planning a round)."""
    if found is not None:
        sobol = [t for t in found.trials if t.source == "sobol"]  # a space-filling design
        first = min((e for t in sobol for e in t.rungs), default=None)  # in rungs: every trial reached the first
        done = [(t.recipe, t.tune_acc if first is None else t.rungs.get(first)) for t in sobol]
        done = [(recipe, tune) for recipe, tune in done if tune is not None]
        found.importance = importances([r for r, _ in done], [tune for _, tune in done], first)
    return found


def _with_failures(values: pd.Series, seeds: int) -> float | None:
    """The mean tune_acc over `seeds` runs of which `values` finished: the others (failed, diverged) count as 0."""
    return float(values.sum()) / max(seeds, len(values)) if len(values) else None


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _drop(df: pd.DataFrame, b: int, big: int, seeds: list[int]) -> Estimate | None:
    """v(b) - v(B) of the runs as they are, paired by seed, over the seeds with both."""
    finals = _val_finals(df[df["arm"] == AS_IS])
    table = finals.pivot_table(index="seed", columns=BATCH, values="val_acc", aggfunc="first")
    if b not in table or big not in table:
        return None
    paired = (table[b] - table[big]).dropna()
    return estimate(paired.to_numpy()) if len(paired) else None
