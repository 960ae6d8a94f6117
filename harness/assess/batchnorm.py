"""Stale batch-norm statistics: how much of a larger batch's lower val_acc the moving averages explain.

Files in, numbers and sentences out (no TensorFlow). A run whose model has batch norm records after every epoch
its accuracies with the statistics recomputed for the current weights (harness.run.precise_bn; the `*_precise_bn`
columns) and `bn_initial_weight`, momentum^steps. The drop in val_acc from the smallest to a larger batch splits
in two that add up to it: the drop that remains with the statistics recomputed at both batch sizes, which the
batch-size verdict's under-training and generalization-gap rules judge on the recomputed accuracies, and the
part stale statistics explain, the rest: the larger batch's staleness (val_acc_precise_bn − val_acc, run by run)
less the smallest batch's (close to 0 once its averages have converged). Batch-norm statistics are named
as a cause when their part is at least SHARE of the drop and its 95% interval excludes 0 (with one seed, when it
is at least SINGLE_SEED_EFFECT: indicative only). Shuffled data only: class-sorted batches are another artefact,
with its own finding (harness.assess.findings.shuffle_finding), and recomputed statistics do not rescue them.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.assess.intervals import t_interval, welch_interval

PRECISE = {"train_eval_acc": "train_eval_acc_precise_bn", "train_eval_loss": "train_eval_loss_precise_bn",
           "val_acc": "val_acc_precise_bn", "val_loss": "val_loss_precise_bn"}
SHARE = 1 / 3
SINGLE_SEED_EFFECT = 0.02
Interval = tuple[float, float] | None


def has_precise(frame: pd.DataFrame) -> bool:
    """The runs' models have batch norm: their rows carry accuracies with recomputed statistics."""
    return PRECISE["val_acc"] in frame.columns and frame[PRECISE["val_acc"]].notna().any()


def recomputed(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows with the accuracies measured with recomputed statistics in place of the moving ones."""
    out = frame.assign(**{plain: frame[precise] for plain, precise in PRECISE.items()})
    return out.assign(gap=out["train_eval_acc"] - out["val_acc"])


@dataclass
class Split:
    """A larger batch's val_acc drop from the smallest batch, split into stale statistics and the rest."""

    small_batch: int
    large_batch: int
    n_small: int
    n_large: int
    drop: float                 # val_acc, smallest minus larger batch (moving statistics)
    drop_interval: Interval
    stale: float                # staleness (val_acc_precise_bn - val_acc) at the larger batch minus at the smallest
    stale_interval: Interval
    remaining: float            # drop - stale: val_acc_precise_bn, smallest minus larger batch
    remaining_interval: Interval
    small_staleness: float      # val_acc_precise_bn - val_acc at the smallest batch
    steps: float                # at the larger batch
    momentum: float             # the most lagging layer's momentum, from bn_initial_weight = momentum^steps
    initial_weight: float
    val: float                  # at the larger batch: val_acc, moving and recomputed; the same for train_eval_acc
    val_precise: float
    train_eval: float
    train_eval_precise: float

    @property
    def named(self) -> bool:
        """Stale statistics are a cause: at least SHARE of a drop, and their part is not 0."""
        if not self.drop > 0 or self.stale < SHARE * self.drop:
            return False
        if self.stale_interval is None:
            return self.stale >= SINGLE_SEED_EFFECT
        return self.stale_interval[0] > 0


def split(small: pd.DataFrame, large: pd.DataFrame) -> Split | None:
    """The split for the runs of the smallest batch and of a larger one (one row each, at the same epoch); None
    without recomputed statistics, or for unshuffled data."""
    if not (has_precise(small) and has_precise(large)):
        return None
    if "shuffle" in large.columns and not large["shuffle"].astype(bool).all():
        return None
    small, large = small.dropna(subset=[PRECISE["val_acc"]]), large.dropna(subset=[PRECISE["val_acc"]])
    if small.empty or large.empty:
        return None
    both = min(len(small), len(large)) >= 2
    drop = float(small["val_acc"].mean() - large["val_acc"].mean())
    staleness = [(runs[PRECISE["val_acc"]] - runs["val_acc"]).to_numpy(dtype=float) for runs in (small, large)]
    remaining = float(small[PRECISE["val_acc"]].mean() - large[PRECISE["val_acc"]].mean())
    steps, weight = float(large["step"].mean()), float(large["bn_initial_weight"].mean())
    return Split(
        small_batch=int(small["global_batch_size"].iloc[0]), large_batch=int(large["global_batch_size"].iloc[0]),
        n_small=len(small), n_large=len(large), drop=drop,
        drop_interval=welch_interval(small["val_acc"].to_numpy(), large["val_acc"].to_numpy()) if both else None,
        stale=drop - remaining, stale_interval=welch_interval(staleness[1], staleness[0]) if both else None,
        remaining=remaining, small_staleness=float(staleness[0].mean()),
        remaining_interval=(welch_interval(small[PRECISE["val_acc"]].to_numpy(),
                                           large[PRECISE["val_acc"]].to_numpy()) if both else None),
        steps=steps, momentum=float(weight ** (1.0 / steps)) if steps > 0 and weight > 0 else float("nan"),
        initial_weight=weight, val=float(large["val_acc"].mean()), val_precise=float(large[PRECISE["val_acc"]].mean()),
        train_eval=float(large["train_eval_acc"].mean()),
        train_eval_precise=float(large[PRECISE["train_eval_acc"]].mean()))


def _interval(interval: Interval) -> str:
    return "" if interval is None else f" [{interval[0]:+.3f}, {interval[1]:+.3f}]"


def sentence(s: Split, where: str = "") -> str:
    """What the split says, with its numbers: the parts of the drop, steps, momentum, bn_initial_weight, and the
    larger batch's accuracies with moving vs recomputed statistics. `where` names the epoch and facet."""
    at = f"Batch {s.large_batch}{where}"
    if s.drop <= 0:
        return f"{at}: no val_acc drop from batch {s.small_batch} for stale batch-norm statistics to explain."
    share = (f"explain {min(s.stale / s.drop, 1.0):.0%} of the val_acc drop from batch {s.small_batch}" if s.named
             else f"explain little of the val_acc drop from batch {s.small_batch}")
    seeds = (f"95% intervals, n = {s.n_large} seeds" if s.stale_interval is not None
             else "n = 1 seed: no interval, indicative only")
    return (f"{at}: stale batch-norm statistics {share}, {s.stale:+.3f}{_interval(s.stale_interval)} of "
            f"{s.drop:+.3f}{_interval(s.drop_interval)} ({seeds}). Its val_acc is {s.val:.3f} with the moving "
            f"statistics and {s.val_precise:.3f} with statistics recomputed for the current weights (train_eval_acc "
            f"{s.train_eval:.3f} vs {s.train_eval_precise:.3f}; recomputing changes batch {s.small_batch}'s by "
            f"{s.small_staleness:+.3f}):"
            f" after {s.steps:.0f} steps at momentum {s.momentum:.3g} the moving averages still carry "
            f"{s.initial_weight:.2g} of their initial values (bn_initial_weight). With the statistics recomputed at "
            f"both batch sizes {s.remaining:+.3f}{_interval(s.remaining_interval)} of the drop remains.")


def mean_interval(values: pd.Series) -> str:
    """'0.712 ± 0.011': the mean and the half-width of its 95% t interval over runs ('0.712' for one run)."""
    values = values.dropna().to_numpy(dtype=float)
    if len(values) == 0:
        return "–"
    if len(values) < 2:
        return f"{values[0]:.3f}"
    low, _ = t_interval(values)
    return f"{values.mean():.3f} ± {values.mean() - low:.3f}"


TABLE_COLUMNS = [("train_acc", "train_acc (running)"), ("train_eval_acc", "train_eval_acc"), ("val_acc", "val_acc"),
                 (PRECISE["train_eval_acc"], "train_eval_acc, recomputed"), (PRECISE["val_acc"], "val_acc, recomputed")]


def table_row(label: str, batch: int, epoch: int, runs: pd.DataFrame) -> list[str]:
    """One row of the findings table: where, steps, bn_initial_weight and each accuracy (mean ± 95% CI)."""
    return [label, str(batch), str(epoch), f"{runs['step'].mean():.0f}", f"{runs['bn_initial_weight'].mean():.2g}",
            *(mean_interval(runs[column]) for column, _ in TABLE_COLUMNS)]


def table_header() -> list[str]:
    return ["runs", "batch", "epoch", "steps", "bn_initial_weight", *(name for _, name in TABLE_COLUMNS)]


def epochs_read(df: pd.DataFrame) -> list[int]:
    """Epoch 2 (the seed note's "second epoch", early in training) and the last epoch every run reached."""
    last = int(df.groupby("run_id")["epoch"].max().min())
    return sorted({e for e in (2, last) if 1 <= e <= last})
