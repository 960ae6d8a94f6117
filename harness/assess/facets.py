"""Sweeps of many facets (every combination of the keys varied besides batch size and seed, e.g. 10 learning rates x
2 optimizers): what the report says of them as one table, and which facets its figures draw.

One verdict block per facet would be a wall of near-identical text, and twenty 95% intervals give about one false
"reproduced" by chance. Beyond MANY facets the verdicts become one table: each facet's drop with its interval and
verdict, and its Welch p-value adjusted for the number of facets by Holm's step-down method (Holm 1979), which
keeps the chance of any false "reproduced" among them at 5%. The table is sorted by the adjusted p-value, so the
facet that decides the headline comes first. The figures draw two facets instead of all: that first one, and
the batch-size curve at the best setting of the other keys for each batch size, chosen on the tuning slice where
the runs have one, otherwise on validation, when it is named so and kept out of every verdict.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.assess.analysis import BATCH
from harness.assess.intervals import welch_p
from harness.assess.verdicts import CLAIM, BatchVerdict

MANY = 6       # more facets than this: one table, and figures of the deciding facets only
LEVEL = 0.05   # the family-wise error rate Holm's adjustment keeps


@dataclass
class FacetRow:
    facet: str
    small: float           # mean final val_acc at the smallest batch size
    large: float           # and at the largest
    drop: float
    interval: tuple[float, float] | None
    n_seeds: int
    outcome: str           # the facet's own verdict
    p_value: float | None  # Welch, two-sided; None with one seed
    adjusted: float | None  # Holm-adjusted for the number of facets
    holds: bool            # reproduced, and still below LEVEL once adjusted


@dataclass
class FacetTable:
    rows: list[FacetRow]   # by adjusted p-value, the strongest evidence first
    headline: str
    note: str              # how the table was adjusted and sorted
    best: str              # the label of the best-setting-per-batch-size curve the figures draw
    shown: list[str]       # the facets the figures draw (the first row's, and `best`)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m is multiplied by m - i + 1,
    then made non-decreasing in that order, and capped at 1."""
    order = np.argsort(p_values, kind="stable")
    adjusted, running = np.empty(len(p_values)), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted.tolist()


def table(verdicts: list[BatchVerdict], final: pd.DataFrame, df: pd.DataFrame) -> FacetTable | None:
    """The table of a sweep with more than MANY facets (None for fewer)."""
    if len(verdicts) <= MANY:
        return None
    rows = [_row(v, final[final["facet"] == v.subject]) for v in verdicts]
    measured = [r for r in rows if r.p_value is not None]
    for row, adjusted in zip(measured, holm([r.p_value for r in measured])):
        row.adjusted, row.holds = adjusted, row.outcome == "reproduced" and adjusted < LEVEL
    rows.sort(key=lambda r: (r.adjusted is None, r.adjusted if r.adjusted is not None else 1.0, -r.drop))
    counts = {o: sum(r.outcome == o for r in rows) for o in ("reproduced", "not reproduced", "inconclusive")}
    held = sum(r.holds for r in rows)
    headline = (f"{CLAIM}: reproduced in {counts['reproduced']} of {len(rows)} facets ({held} once the intervals are "
                f"adjusted for {len(rows)} facets), not reproduced in {counts['not reproduced']}, inconclusive in "
                f"{counts['inconclusive']}. Strongest evidence: {rows[0].facet}.")
    note = (f"Each facet's verdict as a verdict alone would say it (95% Welch interval over seeds); its p-value "
            f"adjusted by Holm's method for the {len(rows)} facets, which keeps the chance of any false "
            f"\"reproduced\" among them at {LEVEL:.0%}; sorted by that adjusted p-value. Click a heading to sort.")
    best = best_label(df)
    return FacetTable(rows, headline, note, best, [rows[0].facet, best])


def _row(verdict: BatchVerdict, final: pd.DataFrame) -> FacetRow:
    sizes = verdict.batch_sizes
    small, large = np.array([]), np.array([])
    if len(sizes) >= 2:
        small, large = (final.loc[final[BATCH] == b, "val_acc"].to_numpy(dtype=float) for b in (sizes[0], sizes[-1]))
    p = welch_p(small, large) if min(len(small), len(large)) >= 2 else None
    return FacetRow(verdict.subject, float(np.mean(small)) if len(small) else float("nan"),
                    float(np.mean(large)) if len(large) else float("nan"), verdict.effect, verdict.interval,
                    verdict.n_seeds, verdict.outcome, p, None, False)


def chosen_on(df: pd.DataFrame) -> str:
    """The metric the best setting per batch size is chosen on: the tuning slice's, where the runs have one."""
    return "tune_acc" if "tune_acc" in df.columns and df["tune_acc"].notna().any() else "val_acc"


def best_label(df: pd.DataFrame) -> str:
    where = "the tuning slice" if chosen_on(df) == "tune_acc" else "validation: not a verdict"
    return f"best setting at each batch size (chosen on {where})"


def shown(df: pd.DataFrame, facets: FacetTable) -> pd.DataFrame:
    """The epochs the figures draw: the first facet's runs, and at each batch size the runs of the facet whose
    completed runs end best on average, relabelled as the best-setting curve (their run ids marked, so that a run
    in both stays one run in each)."""
    first = df[df["facet"] == facets.shown[0]]
    metric = chosen_on(df)
    done = df[(df["status"] == "completed") & df["epoch"].notna()]
    last = done.loc[done.groupby("run_id")["epoch"].idxmax()]
    means = last.groupby([BATCH, "facet"])[metric].mean()
    if means.empty:
        return first
    winners = means.groupby(level=0).idxmax().tolist()  # (batch size, facet) pairs
    chosen = pd.MultiIndex.from_tuples(winners)
    keys = pd.MultiIndex.from_frame(df[[BATCH, "facet"]])
    best = df[keys.isin(chosen)]
    best = best.assign(facet=facets.best, run_id=best["run_id"] + " (best setting)")
    return pd.concat([first, best], ignore_index=True)
