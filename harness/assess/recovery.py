"""+study=recover, round 1: the drop between b and B as they are, and the search's trials ranked on the tuning
slice. Files in, numbers and sentences out.

The plan (sweep.json's `recover`, harness.config.recover) names each job's arm: `as_is`, or `trial_<k>`, the k-th
recipe in Sobol order, at B on the command's first seed. The trials are ranked by their final tune_acc, read from
the runs' files through SELECTION_COLUMNS only (as +study=tuned chooses its learning rates): the validation set,
which the verdict compares on, never enters the choice. Confirmation on the other seeds, the verdict and the
epochs B would need are later rounds; until they run, the reading says so and claims no recovery.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from harness.assess import diagnosis_parts
from harness.assess.analysis import BATCH
from harness.assess.sweep import Sweep
from harness.assess.tuning import SELECTION_COLUMNS

AS_IS = "as_is"
FINISHED = ("completed", "diverged")
NOT_COPIED = ("seed=", "study=", "hydra.", "recover.")  # left out of the recipe's command line (+ stripped)


@dataclass
class Trial:
    number: int
    recipe: dict[str, Any]
    status: str                 # the run's status, or "not started"
    tune_acc: float | None      # its final tuning-slice accuracy (None: not finished, or diverged)


@dataclass
class Recovery:
    small_batch: int
    large_batch: int
    epochs: int
    seeds: list[int]
    drop: diagnosis_parts.Estimate | None   # v(b) - v(B) as they are, on validation, paired over seeds
    reference: dict[str, float | None]      # tune_acc of b and B as they are, at the search's seed
    trials: list[Trial]
    best: int | None
    command: str | None
    headline: str
    notes: list[str] = field(default_factory=list)

    def ranked(self) -> list[Trial]:
        """The finished trials, best tune_acc first, then those without one in Sobol order."""
        done = sorted((t for t in self.trials if t.tune_acc is not None), key=lambda t: (-t.tune_acc, t.number))
        return done + [t for t in self.trials if t.tune_acc is None]

    def as_json(self) -> dict[str, Any]:
        drop = self.drop or diagnosis_parts.estimate([])
        return {"small_batch": self.small_batch, "large_batch": self.large_batch, "epochs": self.epochs, "round": 1,
                "headline": self.headline, "drop": {"value": drop.value, "low": drop.low, "high": drop.high},
                "reference": self.reference,
                "trials": [{"trial": t.number, "recipe": t.recipe, "status": t.status, "tune_acc": t.tune_acc}
                           for t in self.trials],
                "best": self.best, "command": self.command, "notes": self.notes}


def read_plan(sweep: Sweep) -> dict[str, Any] | None:
    """sweep.json's recovery plan, or None for any other sweep."""
    return (sweep.plan or {}).get("recover")


def selection(df: pd.DataFrame) -> pd.DataFrame:
    """What the trials are ranked on: each finished run's last epoch, through SELECTION_COLUMNS (and its job) only."""
    columns = [c for c in (*SELECTION_COLUMNS, "job", "epoch") if c in df.columns]
    rows = df[columns]
    rows = rows[rows["status"].isin(FINISHED) & rows["epoch"].notna()]
    return rows.sort_values("epoch").groupby("run_id").tail(1)


def _val_finals(df: pd.DataFrame) -> pd.DataFrame:
    done = df[df["status"].isin(FINISHED) & df["epoch"].notna()]
    return done.sort_values("epoch").groupby("run_id").tail(1)


def recover(sweep: Sweep) -> Recovery | None:
    """Round 1's reading of a +study=recover sweep (None for any other), from the runs finished so far."""
    plan = read_plan(sweep)
    if plan is None:
        return None
    df, b, big = sweep.epochs, plan["small_batch"], plan["large_batch"]
    arm = df["job"].map(lambda job: plan["arms"].get(str(job)))
    chosen = selection(df).assign(arm=lambda f: f["job"].map(lambda j: plan["arms"].get(str(j))))
    tune = {row["arm"]: row["tune_acc"] for row in chosen.to_dict("records") if row["arm"] != AS_IS}
    status = {plan["arms"].get(str(r["job"])): r["status"] for r in sweep.records}
    trials = [Trial(k, recipe, status.get(f"trial_{k}", "not started"),
                    _number(tune.get(f"trial_{k}")) if status.get(f"trial_{k}") == "completed" else None)
              for k, recipe in enumerate(plan["trials"])]
    first = plan["seeds"][0]
    as_is = chosen[chosen["arm"] == AS_IS]
    reference = {name: _number(as_is.loc[(as_is[BATCH] == size) & (as_is["seed"] == first), "tune_acc"].max())
                 for name, size in (("b", b), ("B", big))}
    drop = _drop(df.assign(arm=arm), b, big, plan["seeds"])
    best = next((t.number for t in sorted(trials, key=lambda t: (-(t.tune_acc or -1.0), t.number))
                 if t.tune_acc is not None), None)
    command = _command(sweep, plan, best)
    found = Recovery(b, big, plan["epochs"], list(plan["seeds"]), drop, reference, trials, best, command, "")
    found.headline, found.notes = _headline(found), _notes(found, plan)
    return found


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _drop(df: pd.DataFrame, b: int, big: int, seeds: list[int]) -> diagnosis_parts.Estimate | None:
    """v(b) - v(B) of the runs as they are, paired by seed, over the seeds with both."""
    finals = _val_finals(df[df["arm"] == AS_IS])
    table = finals.pivot_table(index="seed", columns=BATCH, values="val_acc", aggfunc="first")
    if b not in table or big not in table:
        return None
    paired = (table[b] - table[big]).dropna()
    return diagnosis_parts.estimate(paired.to_numpy()) if len(paired) else None


def _command(sweep: Sweep, plan: dict[str, Any], best: int | None) -> str | None:
    """The best trial as a command line at B: its run's overrides less the seed, the study and Hydra's."""
    if best is None:
        return None
    job = next((num for num, arm in plan["arms"].items() if arm == f"trial_{best}"), None)
    overrides = next((r.get("overrides") or [] for r in sweep.records if str(r["job"]) == job), [])
    kept = [o for o in overrides if not o.lstrip("+~").startswith(NOT_COPIED)]
    return shlex.join(["python", "-m", "harness", *kept])


def _recipe_words(recipe: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in recipe.items() if value is not None)


def _headline(r: Recovery) -> str:
    done = [t for t in r.trials if t.tune_acc is not None]
    if r.best is None:
        return (f"The search at batch {r.large_batch} has no finished trial yet ({len(done)} of {len(r.trials)}): "
                "nothing to rank.")
    best = r.trials[r.best]
    ref = r.reference
    against = (f"; as they are, batch {r.small_batch} reached {ref['b']:.3f} and batch {r.large_batch} "
               f"{ref['B']:.3f}" if ref["b"] is not None and ref["B"] is not None else "")
    return (f"Round 1, the search: of {len(done)} recipes at batch {r.large_batch} within {r.epochs} epochs (seed "
            f"{r.seeds[0]}), the best on the tuning slice reached tune_acc {best.tune_acc:.3f}{against}. It is "
            f"{_recipe_words(best.recipe)}. Not yet confirmed on other seeds or compared on validation: no verdict "
            "on recovery.")


def _notes(r: Recovery, plan: dict[str, Any]) -> list[str]:
    notes = [f"Every trial is ranked by its final tune_acc on the held-out tuning slice (the same samples in every "
             f"run); the validation set, on which batch {r.small_batch} and batch {r.large_batch} are compared, "
             "plays no part in the ranking.",
             "One seed per trial: a trial's rank carries its seed's noise. The next rounds confirm the best on the "
             "other seeds, paired with batch {b}'s, and measure the epochs batch {B} needs when none recovers its "
             "accuracy; they do not run yet.".format(b=r.small_batch, B=r.large_batch)]
    if r.drop is not None and r.drop.value is not None:
        d = r.drop
        interval = ("" if d.low is None else " (identical at every seed)" if d.identical
                    else f" [{d.low:+.3f}, {d.high:+.3f}] (95% interval)")
        notes.insert(0, f"As they are, batch {r.large_batch} lost {d.value:+.3f}{interval} of val_acc to batch "
                        f"{r.small_batch}, paired over {d.n} seed(s).")
    notes += [f"{key}: not searched, since it applies to {why}." for key, why in plan.get("left_out", {}).items()]
    return notes
