"""A learning rate tuned for each batch size (+study=tuned; Shallue et al. 2019): which learning rate won on the
held-out tuning slice, whether it sits at an edge of the grid, which scaling rule the winners follow, and the
batch-size verdict at the tuned learning rates beside the untuned one from the same sweep. Files only.

The choice reads SELECTION_COLUMNS alone: the tuning slice's accuracy and loss, never a validation column, so
the validation set the verdict compares on plays no part in choosing the learning rate. A sweep that also varies
other keys (optimizer=adam,sgd) is tuned within each combination of them, never across.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.assess import analysis, verdicts
from harness.assess.analysis import BATCH, GRID_KEYS, SELECTION_COLUMNS
from harness.assess.verdicts import BatchVerdict
from harness.store.run_files import FINISHED

# What the choice may read: a run's identity, its learning rate and the tuning slice's final metrics
RULES = {"linear": 1.0, "√": 0.5}     # lr ∝ batch^k (Goyal et al. 2017; Hoffer et al. 2017)
NEAREST = {"no scaling (k = 0)": 0.0, "√ rule (k = 0.5)": 0.5, "linear rule (k = 1)": 1.0}


@dataclass
class Choice:
    batch: int
    lr: float           # the winning peak learning rate (lr x lr_factor, scaled)
    tune_acc: float     # its final tune_acc, mean over seeds (a diverged run counts 0)
    seeds: int
    grid: list[float]   # the learning rates with a result at this batch size
    edge: str | None    # "smallest" or "largest" when the winner is at that end of the grid, else None


@dataclass
class Tuning:
    group: str                    # the other varied keys this grid was tuned within ("" when none vary)
    scores: pd.DataFrame          # one row per (batch, peak_lr): tune_acc, tune_loss (seed means), runs, diverged
    choices: list[Choice]
    exponent: float | None        # least-squares slope of log(chosen lr) on log(batch)
    tune_size: int | None         # samples in the tuning slice
    final: pd.DataFrame           # completed runs with `arm`: "tuned" (at the chosen lr) or "untuned"
    untuned: str | None = None    # what the untuned arm ran at ("lr 0.001"), or None without one
    tuned_verdict: BatchVerdict | None = None
    untuned_verdict: BatchVerdict | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def verdicts(self) -> list[BatchVerdict]:
        return [v for v in (self.tuned_verdict, self.untuned_verdict) if v is not None]


def last_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The final epoch of every completed or diverged run, SELECTION_COLUMNS only."""
    done = df[df["status"].isin(FINISHED) & df["epoch"].notna()]
    last = done.sort_values("epoch").groupby("run_id", sort=False).tail(1)
    return last[SELECTION_COLUMNS].reset_index(drop=True)


def score_grid(rows: pd.DataFrame) -> pd.DataFrame:
    """Seed means of the final tune_acc and tune_loss per (batch, learning rate); a diverged run scores 0."""
    rows = rows[SELECTION_COLUMNS].assign(diverged=rows["status"] == "diverged")
    rows.loc[rows["diverged"], "tune_acc"] = 0.0
    scores = rows.groupby([BATCH, "peak_lr"]).agg(tune_acc=("tune_acc", "mean"), tune_loss=("tune_loss", "mean"),
                                                  runs=("run_id", "count"), diverged=("diverged", "sum"))
    return scores.reset_index()


def choose(scores: pd.DataFrame) -> list[Choice]:
    """The winner of every batch size: the highest mean tune_acc, ties to the lower tune_loss."""
    choices = []
    for batch, cells in scores.groupby(BATCH):
        grid = sorted(cells["peak_lr"].tolist())
        ranked = cells.assign(loss=cells["tune_loss"].fillna(np.inf)).sort_values(
            ["tune_acc", "loss"], ascending=[False, True])
        best = ranked.iloc[0]
        edge = None
        if len(grid) > 1 and best["peak_lr"] == grid[0]:
            edge = "smallest"
        elif len(grid) > 1 and best["peak_lr"] == grid[-1]:
            edge = "largest"
        choices.append(Choice(int(batch), float(best["peak_lr"]), float(best["tune_acc"]), int(best["runs"]), grid,
                              edge))
    return choices


def scaling_exponent(choices: list[Choice]) -> float | None:
    """k in chosen lr ∝ batch^k (least squares on log-log), from two or more batch sizes."""
    if len(choices) < 2:
        return None
    k, _ = np.polyfit(np.log([c.batch for c in choices]), np.log([c.lr for c in choices]), 1)
    return float(k)


def tunes(frame: pd.DataFrame) -> bool:
    """The runs held out a tuning slice and some batch size ran at two or more points of a learning-rate grid."""
    if "tune_acc" not in frame.columns or frame["tune_acc"].isna().all():
        return False
    per_run = frame.drop_duplicates("run_id")
    keys = [k for k in GRID_KEYS if k in per_run.columns]
    return bool(keys) and bool((per_run.groupby(BATCH)[keys].nunique() > 1).any(axis=None))


def assess(df: pd.DataFrame, final: pd.DataFrame, facets: list[str], not_started: int = 0) -> list[Tuning]:
    """The tuned study's reading of a sweep (`final`: analysis.final_results of `df`): one Tuning per combination
    of the varied keys other than the grid's (one in all for +study=tuned), none when the sweep tuned nothing.
    `not_started`: jobs without a run yet."""
    found = [_assess_group(group, frame, final[final["run_id"].isin(frame["run_id"])], not_started)
             for group, frame in analysis.groups(df, [k for k in facets if k not in GRID_KEYS]) if tunes(frame)]
    return sorted(found, key=lambda t: analysis.facet_order([x.group for x in found]).index(t.group))


def _assess_group(group: str, df: pd.DataFrame, final: pd.DataFrame, not_started: int) -> Tuning:
    per_run = df.drop_duplicates("run_id")
    scores = score_grid(last_rows(df))
    choices = choose(scores)
    chosen = {c.batch: c.lr for c in choices}
    at_chosen = lambda frame: [chosen.get(b) == lr for b, lr in zip(frame[BATCH], frame["peak_lr"])]  # noqa: E731
    untuned_runs, untuned = _untuned_runs(per_run)
    tuned_final = final[at_chosen(final)].assign(arm="tuned")
    untuned_final = final[final["run_id"].isin(untuned_runs["run_id"])].assign(arm="untuned")
    sizes = df["tune_size"].dropna() if "tune_size" in df.columns else pd.Series(dtype=float)
    tuning = Tuning(group, scores, choices, scaling_exponent(choices), int(sizes.iloc[0]) if len(sizes) else None,
                    pd.concat([tuned_final, untuned_final], ignore_index=True), untuned)
    runs = analysis.runs_table(df).merge(per_run[["run_id", "peak_lr"]], on="run_id")
    missing = runs[~runs["status"].isin(FINISHED)]
    prefix = f" · {group}" if group else ""
    tuning.tuned_verdict = _tuned_verdict(
        tuned_final, pd.concat([runs[at_chosen(runs)], missing]), f"tuned{prefix}: every batch size at the learning "
        "rate its tuning slice chose", choices, len(missing) + not_started)
    if untuned is not None:
        tuning.untuned_verdict = verdicts.batch_size_verdict(
            untuned_final, f"untuned{prefix}: every batch size at {untuned}",
            runs[runs["run_id"].isin(untuned_runs["run_id"])])
    tuning.lines = _lines(tuning)
    return tuning


def _untuned_runs(per_run: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The runs at the learning rate as configured (lr_factor 1), whatever their status, and what it was; none
    when `lr` itself took several values there (the grid swept `lr`: no single untuned learning rate)."""
    if "lr_factor" not in per_run.columns:
        return per_run.iloc[:0], None
    runs = per_run[per_run["lr_factor"] == 1.0]
    if runs.empty or runs["base_lr"].nunique() != 1:
        return per_run.iloc[:0], None
    scaling = runs["lr_scaling"].iloc[0] if "lr_scaling" in runs.columns else "none"
    return runs, f"lr {format_lr(runs['base_lr'].iloc[0])}" + ("" if scaling == "none" else f" ({scaling} scaling)")


def format_lr(value: float) -> str:
    return f"{value:.3g}"


def _tuned_verdict(final: pd.DataFrame, runs: pd.DataFrame, subject: str, choices: list[Choice],
                   missing: int) -> BatchVerdict:
    """The batch-size verdict at the chosen learning rates; inconclusive, whatever its numbers, when the choice
    itself is in doubt: a winner at an edge of the grid, a batch size with one learning rate, runs of the grid
    without a result."""
    verdict = verdicts.batch_size_verdict(final, subject, runs)
    doubts = []
    edges = [c for c in choices if c.edge]
    if edges:
        narrow = "; ".join(f"batch {c.batch} chose {format_lr(c.lr)}, the {c.edge} in the grid" for c in edges)
        doubts.append(f"The grid was too narrow ({narrow}), so a better learning rate may lie beyond it: widen the "
                      "grid (lr_factor=..., or move its centre with lr=) and run again")
    single = [c.batch for c in choices if len(c.grid) < 2]
    if single:
        doubts.append(f"Batch {', '.join(map(str, single))} has a result at one learning rate only, so nothing was "
                      "tuned there")
    if missing:
        doubts.append(f"{missing} run(s) of the grid have no result (failed, unfinished or not started), so the "
                      "choice may still change once resuming the sweep runs them")
    if not doubts:
        return verdict
    return dataclasses.replace(verdict, outcome="inconclusive", headline=(
        f"{verdicts.CLAIM} at tuned learning rates: inconclusive. {'. '.join(doubts)}. At the learning rates "
        f"chosen: {verdict.headline.split('. ', 1)[-1]}"))


def _lines(tuning: Tuning) -> list[str]:
    slice_size = f"{tuning.tune_size} held-out training samples" if tuning.tune_size else "the held-out slice"
    picks = "; ".join(f"batch {c.batch}: lr {format_lr(c.lr)} (tune_acc {c.tune_acc:.3f}, n = {c.seeds})"
                      for c in tuning.choices)
    where = f" ({tuning.group})" if tuning.group else ""
    lines = [f"Chosen{where} on the tuning slice ({slice_size}, never the validation set) by the final tune_acc, "
             f"mean over seeds: {picks}."]
    edges = [c for c in tuning.choices if c.edge]
    for c in edges:
        lines.append(f"Batch {c.batch}'s winner {format_lr(c.lr)} is the {c.edge} learning rate tried "
                     f"({format_lr(c.grid[0])} to {format_lr(c.grid[-1])}): the grid was too narrow there.")
    if tuning.exponent is not None:
        k = tuning.exponent
        nearest = min(NEAREST, key=lambda rule: abs(NEAREST[rule] - k))
        first, last = tuning.choices[0], tuning.choices[-1]
        bound = ", and a winner at the grid's edge makes it a bound only." if edges else "."
        lines.append(f"From batch {first.batch} to {last.batch} the chosen learning rate went from "
                     f"{format_lr(first.lr)} to {format_lr(last.lr)}: lr ∝ batch^{k:.2f} (least squares), nearest "
                     f"{nearest}; the grid's steps make this coarse{bound}")
    tuned, untuned = tuning.tuned_verdict, tuning.untuned_verdict
    if untuned is not None and math.isfinite(tuned.effect) and math.isfinite(untuned.effect):
        lines.append(f"The val_acc drop from batch {tuned.batch_sizes[0]} to {tuned.batch_sizes[-1]} is "
                     f"{tuned.effect:+.3f} with the learning rate tuned per batch size, {untuned.effect:+.3f} at "
                     f"{tuning.untuned} for all.")
    elif untuned is None:
        lines.append("No untuned comparison: no run has lr_factor=1 at a single lr.")
    return lines
