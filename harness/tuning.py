"""A learning rate tuned for each batch size (+study=tuned; Shallue et al. 2019): which learning rate won on the
held-out tuning slice, whether it sits at an edge of the grid, which scaling rule the winners follow, and the
batch-size verdict at the tuned learning rates beside the untuned one from the same sweep. Files only.

The choice reads SELECTION_COLUMNS alone: the tuning slice's accuracy and loss, never a validation column, so
the validation set the verdict compares on plays no part in choosing the learning rate.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness import analysis, verdicts
from harness.analysis import BATCH
from harness.verdicts import BatchVerdict

# What the choice may read: a run's identity, its learning rate and the tuning slice's final metrics
SELECTION_COLUMNS = ["run_id", BATCH, "peak_lr", "seed", "status", "tune_acc", "tune_loss"]
RULES = {"linear": 1.0, "√": 0.5}  # lr ∝ batch^k (Goyal et al. 2017; Hoffer et al. 2017, Krizhevsky 2014)


@dataclass
class Choice:
    batch: int
    lr: float           # the winning peak learning rate (lr x lr_factor)
    tune_acc: float     # its final tune_acc, mean over seeds (a diverged run counts 0)
    seeds: int
    grid: list[float]   # the learning rates tried at this batch size
    edge: str | None    # "smallest" or "largest" when the winner is at that end of the grid, else None


@dataclass
class Tuning:
    scores: pd.DataFrame          # one row per (batch, peak_lr): tune_acc, tune_loss (seed means), runs, diverged
    choices: list[Choice]
    untuned_lr: float | None      # the one learning rate every batch size was run at, as configured
    exponent: float | None        # least-squares slope of log(chosen lr) on log(batch)
    tune_size: int | None         # samples in the tuning slice
    final: pd.DataFrame           # completed runs, with `arm`: "tuned" (at the chosen lr), "untuned" or None
    lines: list[str] = field(default_factory=list)
    verdicts: list[BatchVerdict] = field(default_factory=list)


def is_tuned(df: pd.DataFrame) -> bool:
    """A sweep held out a tuning slice and ran some batch size at two or more learning rates."""
    if "tune_acc" not in df.columns or "peak_lr" not in df.columns or df["tune_acc"].isna().all():
        return False
    per_run = df.drop_duplicates("run_id")
    return bool((per_run.groupby(BATCH)["peak_lr"].nunique() > 1).any())


def last_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The final epoch of every completed or diverged run, SELECTION_COLUMNS only."""
    done = df[df["status"].isin(["completed", "diverged"]) & df["epoch"].notna()]
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


def untuned_lr(final: pd.DataFrame) -> float | None:
    """The learning rate the sweep was configured with (lr_factor = 1), where every batch size ran at it; else
    the grid's middle value among those every batch size ran at."""
    shared = set.intersection(*(set(g["peak_lr"]) for _, g in final.groupby(BATCH))) if len(final) else set()
    if not shared:
        return None
    configured = final[final["lr_factor"] == 1.0]["peak_lr"] if "lr_factor" in final.columns else pd.Series()
    if len(configured) and configured.iloc[0] in shared:
        return float(configured.iloc[0])
    ordered = sorted(shared)
    return float(ordered[(len(ordered) - 1) // 2])


def assess(df: pd.DataFrame, final: pd.DataFrame) -> Tuning | None:
    """The tuned study's reading of a sweep, or None when the sweep tuned nothing (see is_tuned)."""
    if not is_tuned(df):
        return None
    scores = score_grid(last_rows(df))
    choices = choose(scores)
    chosen = {c.batch: c.lr for c in choices}
    untuned = untuned_lr(final)
    arm = [("tuned" if chosen.get(b) == lr else "untuned" if lr == untuned else None)
           for b, lr in zip(final[BATCH], final["peak_lr"])]
    # a run at the chosen lr that is also the untuned lr belongs to both arms: keep it in each frame
    final = final.assign(arm=arm)
    both = final[(final["arm"] == "tuned") & (final["peak_lr"] == untuned)].assign(arm="untuned")
    final = pd.concat([final, both], ignore_index=True)
    sizes = df["tune_size"].dropna() if "tune_size" in df.columns else pd.Series(dtype=float)
    tuning = Tuning(scores, choices, untuned, scaling_exponent(choices), int(sizes.iloc[0]) if len(sizes) else None,
                    final)
    tuning.verdicts = _verdicts(df, tuning)
    tuning.lines = _lines(tuning)
    return tuning


def _lr(value: float) -> str:
    return f"{value:.3g}"


def _verdicts(df: pd.DataFrame, tuning: Tuning) -> list[BatchVerdict]:
    runs = analysis.runs_table(df)
    lr_of = df.drop_duplicates("run_id").set_index("run_id")["peak_lr"]
    runs = runs.assign(peak_lr=runs["run_id"].map(lr_of))
    chosen = {c.batch: c.lr for c in tuning.choices}
    tuned_runs = runs[[chosen.get(b) == lr for b, lr in zip(runs[BATCH], runs["peak_lr"])]]
    final = tuning.final
    tuned = verdicts.batch_size_verdict(final[final["arm"] == "tuned"], "tuned: every batch size at the learning "
                                        "rate its tuning slice chose", tuned_runs)
    edges = [c for c in tuning.choices if c.edge]
    if edges:
        narrow = "; ".join(f"batch {c.batch} chose {_lr(c.lr)}, the {c.edge} in the grid" for c in edges)
        tuned = dataclasses.replace(tuned, outcome="inconclusive", headline=(
            f"{verdicts.CLAIM} at tuned learning rates: inconclusive. The grid was too narrow ({narrow}), so a "
            "better learning rate may lie beyond it: widen the grid (lr_factor=..., or move its centre with lr=) "
            f"and run again. At the learning rates chosen: {tuned.headline.split('. ', 1)[-1]}"))
    if tuning.untuned_lr is None:
        return [tuned]
    untuned = verdicts.batch_size_verdict(final[final["arm"] == "untuned"], f"untuned: every batch size at lr "
                                          f"{_lr(tuning.untuned_lr)}", runs[runs["peak_lr"] == tuning.untuned_lr])
    return [tuned, untuned]


def _lines(tuning: Tuning) -> list[str]:
    slice_size = f"{tuning.tune_size} held-out training samples" if tuning.tune_size else "the held-out slice"
    picks = "; ".join(f"batch {c.batch}: lr {_lr(c.lr)} (tune_acc {c.tune_acc:.3f}, n = {c.seeds})"
                      for c in tuning.choices)
    lines = [f"Chosen on the tuning slice ({slice_size}, never the validation set) by the final tune_acc, mean over "
             f"seeds: {picks}."]
    for c in tuning.choices:
        if c.edge:
            lines.append(f"Batch {c.batch}'s winner {_lr(c.lr)} is the {c.edge} learning rate tried "
                         f"({_lr(c.grid[0])} to {_lr(c.grid[-1])}): the grid was too narrow there.")
    if tuning.exponent is not None:
        k = tuning.exponent
        nearest = min(RULES, key=lambda rule: abs(RULES[rule] - k))
        first, last = tuning.choices[0], tuning.choices[-1]
        lines.append(f"From batch {first.batch} to {last.batch} the chosen learning rate went from {_lr(first.lr)} "
                     f"to {_lr(last.lr)}: lr ∝ batch^{k:.2f} (least squares), nearest the {nearest} rule "
                     f"(batch^{RULES[nearest]:g}); the grid's steps make this coarse.")
    by_arm = {v.subject.split(":")[0]: v for v in tuning.verdicts}
    if {"tuned", "untuned"} <= set(by_arm) and all(math.isfinite(by_arm[a].effect) for a in ("tuned", "untuned")):
        tuned, untuned = by_arm["tuned"], by_arm["untuned"]
        lines.append(f"The val_acc drop from batch {tuned.batch_sizes[0]} to {tuned.batch_sizes[-1]} is "
                     f"{tuned.effect:+.3f} with the learning rate tuned per batch size, {untuned.effect:+.3f} at "
                     f"lr {_lr(tuning.untuned_lr)} for all.")
    return lines
