"""Findings on the other suspects of "high train_acc, low val_acc", each computed from the sweep's data.

Each function returns a Finding, or None when the sweep does not vary what it looks at. A treated run is
compared with the runs that differ from it only in the key under study (seeds averaged); a finding says
"reproduced" only when the data show the effect, and gives its numbers either way. The controls of the
batch-size study are in harness.assess.batch_controls.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.assess import batchnorm, levels
from harness.assess.analysis import BATCH, num_classes
from harness.assess.verdicts import CHANCE_MARGIN, MIN_EFFECT, Verdict, accuracy_reading

Finding = Verdict  # `subject` names the suspect


@dataclass
class Comparison:
    """A treated group beside its reference, for the findings figure: each metric's values, one per run."""

    title: str
    reference: str
    treated: str
    metrics: dict[str, tuple[list[float], list[float]]]  # metric -> (reference runs' values, treated runs' values)


def compare(title: str, reference: str, treated: str, reference_runs: pd.DataFrame, treated_runs: pd.DataFrame,
             metrics=("train_eval_acc", "val_acc")) -> Comparison:
    return Comparison(title, reference, treated,
                      {m: (reference_runs[m].tolist(), treated_runs[m].tolist()) for m in metrics})


def _same(column: pd.Series, value) -> pd.Series:
    return column.isna() if pd.isna(value) else column == value


def _cells(runs: pd.DataFrame, keys: list[str], labelled: list[str]):
    """(label, values, runs) for each combination of `keys`; the label names the `labelled` keys that vary."""
    shown = [k for k in labelled if runs[k].astype(str).nunique() > 1]
    for values, cell in runs.groupby(keys, dropna=False):
        row = dict(zip(keys, values))
        yield ", ".join(f"{k}={row[k]}" for k in shown), row, cell


def _matched(final: pd.DataFrame, key: str, reference, varied: list[str]):
    """(value, label, treated runs, matched reference runs) for each non-reference value of `key` crossed with
    every combination of the other varied keys (seeds averaged): treated runs are compared only with reference
    runs equal to them in everything else the sweep varied, never with an average over a varied key."""
    others = [k for k in varied if k not in (key, "seed") and k in final.columns]
    references = final[final[key] == reference]
    for label, cell, treated in _cells(final[final[key] != reference], [key, *others], others):
        control = references
        for other in others:
            control = control[_same(control[other], cell[other])]
        if not control.empty:
            yield cell[key], label, treated, control


def _where(label: str) -> str:
    return f" ({label})" if label else ""


def _modal(final: pd.DataFrame, keep: list[str], varied: list[str]) -> pd.DataFrame:
    """Runs whose varied keys other than `keep` (and seed) hold their most common value."""
    for other in (k for k in varied if k not in keep and k != "seed"):
        final = final[final[other] == final[other].mode().iloc[0]]
    return final


def _finding(study: str, claim: str, outcomes: list[bool], details: list[str],
             comparisons: list[Comparison]) -> Finding | None:
    """Reproduced when any treated group shows the effect; None when no group had a matched reference."""
    if not details:
        return None
    outcome = "reproduced" if any(outcomes) else "not reproduced"
    return Finding(study, outcome, f"{claim}: {outcome}.", details, comparisons)


def shuffle_finding(df: pd.DataFrame, varied: list[str]) -> Finding | None:
    """Unshuffled data: is the running train accuracy high while validation sits near chance (80% vs 6%)?"""
    if "shuffle" not in df.columns or df["shuffle"].astype(bool).all():
        return None
    chance = 1.0 / num_classes(df)
    epochs = df[df["epoch"].notna() & ~df["shuffle"].astype(bool)]
    others = [k for k in varied if k not in ("shuffle", "seed", "batch_size") and k in df.columns]
    details, comparisons, shown, honest_train = [], [], False, True
    for label, cell, runs in _cells(epochs, [BATCH, *others], others):
        curve = runs.groupby("epoch")[["train_acc", "train_eval_acc", "val_acc"]].mean()
        worst = (curve["train_acc"] - curve["val_acc"]).idxmax()
        row = curve.loc[worst]
        illusion = row["train_acc"] >= 0.5 and row["val_acc"] <= chance + CHANCE_MARGIN
        shown |= illusion
        honest_train &= abs(row["train_eval_acc"] - row["val_acc"]) <= 0.05
        details.append(
            f"batch {cell[BATCH]}{_where(label)}: at epoch {int(worst)} the running train_acc was "
            f"{row['train_acc']:.2f} while val_acc was {row['val_acc']:.2f} (chance {chance:.2f}); measured after "
            "the epoch, train accuracy was "
            f"{row['train_eval_acc']:.2f} ({runs['run_id'].nunique()} run(s))."
            + _recomputed_note(runs[runs["epoch"] == worst])
        )
        shuffled = df[df["shuffle"].astype(bool) & (df["epoch"] == worst) & (df[BATCH] == cell[BATCH])]
        for other in others:
            shuffled = shuffled[_same(shuffled[other], cell[other])]
        comparisons.append(compare(f"batch {cell[BATCH]}{_where(label)}, epoch {int(worst)}",
                                    "shuffled" if len(shuffled) else "no shuffled run to compare",
                                    "class-sorted", shuffled, runs[runs["epoch"] == worst],
                                    ("train_acc", "train_eval_acc", "val_acc")))
    outcome = "reproduced" if shown else "not reproduced"
    headline = (f"Unshuffled, class-sorted data gave high running train accuracy with validation near chance: "
                f"{outcome}.")
    if shown and honest_train:
        details.append("The running mean scores each batch on the class the model has just been fitting; after the "
                       "epoch, in inference mode, train accuracy is as low as validation: no generalization gap, an "
                       "artefact of the order.")
    return Finding("Unshuffled data", outcome, headline, details, comparisons)


def _recomputed_note(rows: pd.DataFrame) -> str:
    """For a model with batch norm: whether recomputed statistics rescue the epoch (stale statistics) or not (the
    weights themselves follow the class order)."""
    if not batchnorm.has_precise(rows):
        return ""
    recomputed, moving = rows["val_acc_precise_bn"].mean(), rows["val_acc"].mean()
    verdict = ("so stale batch-norm statistics, not the order, hold it down" if recomputed - moving >= 0.1 else
               "so stale batch-norm statistics do not explain it")
    return f" With batch-norm statistics recomputed for the current weights val_acc is {recomputed:.2f}, {verdict}."


def imbalance_finding(final: pd.DataFrame, varied: list[str]) -> Finding | None:
    """Class imbalance: train accuracy stays high, validation accuracy and minority recall fall."""
    if "imbalance" not in final.columns or not (final["imbalance"] > 0).any():
        return None
    recalls = [c for c in final.columns if c.startswith("val_recall_")]
    details, outcomes, comparisons = [], [], []
    for fraction, label, treated, control in _matched(final, "imbalance", 0.0, varied):
        comparisons.append(compare(f"class 0 = {fraction:.0%}{_where(label)}", "balanced", f"class 0 = {fraction:.0%}",
                                    control, treated))
        val_drop = control["val_acc"].mean() - treated["val_acc"].mean()
        train = treated["train_eval_acc"].mean()
        worst = min(recalls, key=lambda c: treated[c].mean()) if recalls else None
        outcomes.append(val_drop >= 2 * MIN_EFFECT and train - treated["val_acc"].mean() >= 0.05)
        details.append(
            f"class 0 at {fraction:.0%} of the training set{_where(label)}: train_eval_acc {train:.3f}, val_acc "
            f"{treated['val_acc'].mean():.3f} vs {control['val_acc'].mean():.3f} balanced (drop {val_drop:+.3f})"
            + (f"; lowest class recall {treated[worst].mean():.2f} ({worst}) vs {control[worst].mean():.2f}, "
               f"class 0 recall {treated['val_recall_0'].mean():.2f}" if worst else "") + "."
        )
    return _finding("Class imbalance", "Imbalanced training data gave high train accuracy and lower validation "
                    "accuracy", outcomes, details, comparisons)


def preprocess_finding(final: pd.DataFrame, varied: list[str]) -> Finding | None:
    """Train and validation preprocessed differently: validation falls, train accuracy does not move."""
    if "preprocess_mismatch" not in final.columns or (final["preprocess_mismatch"] == "none").all():
        return None
    details, outcomes, comparisons = [], [], []
    for kind, label, treated, control in _matched(final, "preprocess_mismatch", "none", varied):
        comparisons.append(compare(f"{kind}{_where(label)}", "matched", kind, control, treated))
        val_drop = control["val_acc"].mean() - treated["val_acc"].mean()
        train_change = treated["train_eval_acc"].mean() - control["train_eval_acc"].mean()
        outcomes.append(val_drop >= 0.05 and abs(train_change) <= 2 * MIN_EFFECT)
        details.append(f"{kind}{_where(label)}: val_acc {treated['val_acc'].mean():.3f} vs "
                       f"{control['val_acc'].mean():.3f} matched (drop {val_drop:+.3f}); train_eval_acc changed by "
                       f"{train_change:+.3f}.")
    return _finding("Preprocessing mismatch", "Validation preprocessed differently lowered val_acc with train "
                    "accuracy unchanged", outcomes, details, comparisons)


def capacity_finding(final: pd.DataFrame, varied: list[str]) -> Finding | None:
    """An over-large model on little data: does the gap grow with width and shrink with more data?"""
    keys = [k for k in ("model.width", "train_fraction") if k in varied]
    if not keys:
        return None
    modal = _modal(final, keys, varied)
    cells = modal.groupby(keys)[["train_eval_acc", "val_acc", "gap"]].mean().reset_index()
    if len(cells) < 2:
        return None
    details = [", ".join(f"{k}={row[k]:g}" for k in keys) + f": gap {row['gap']:+.3f} (train_eval_acc "
               f"{row['train_eval_acc']:.3f}, val_acc {row['val_acc']:.3f})" for _, row in cells.iterrows()]
    big, small = cells, cells  # the largest model on the least data; the smallest on the most
    if "model.width" in keys:
        big, small = big[big["model.width"] == big["model.width"].max()], small[small["model.width"] == small["model.width"].min()]
    if "train_fraction" in keys:
        big = big[big["train_fraction"] == big["train_fraction"].min()]
        small = small[small["train_fraction"] == small["train_fraction"].max()]
    if big.empty or small.empty:
        return None
    widened = big["gap"].iloc[0] - small["gap"].iloc[0]
    runs_of = lambda cell: modal[(modal[keys] == cell[keys].iloc[0]).all(axis=1)]  # noqa: E731
    name_of = lambda cell: ", ".join(f"{k}={cell[k].iloc[0]:g}" for k in keys)  # noqa: E731
    comparison = compare("smallest model on the most data vs largest on the least", name_of(small), name_of(big),
                          runs_of(small), runs_of(big))
    outcome = "reproduced" if widened >= 0.05 else "not reproduced" if widened < MIN_EFFECT else "inconclusive"
    return Finding("Model capacity and data size", outcome,
                   f"A larger model on less data widened the gap (train_eval_acc - val_acc): {outcome} "
                   f"({widened:+.3f} from the smallest model on the most data to the largest on the least).",
                   details, [comparison])


def batchnorm_finding(df: pd.DataFrame, varied: list[str]) -> Finding | None:
    """Stale batch-norm statistics: at epoch 2 and the last epoch, how much of each larger batch's val_acc drop
    from the smallest batch do the moving averages explain (harness.assess.batchnorm)? Shuffled runs of models with
    batch norm only."""
    epochs = df[df["epoch"].notna() & (df["status"] == "completed")]
    if "shuffle" in epochs.columns:
        epochs = epochs[epochs["shuffle"].astype(bool)]
    if not batchnorm.has_precise(epochs) or epochs[BATCH].nunique() < 2:
        return None
    others = [k for k in varied if k not in ("seed", "batch_size") and k in epochs.columns]
    details, rows, comparisons, named = [], [], [], []
    read = batchnorm.epochs_read(epochs)
    for label, cell, runs in _cells(epochs, others, others) if others else [("", {}, epochs)]:
        sizes = sorted(runs[BATCH].unique())
        for epoch in read:
            at = runs[runs["epoch"] == epoch]
            small = at[at[BATCH] == sizes[0]]
            rows.append(batchnorm.table_row(label or "all runs", sizes[0], epoch, small))
            for size in sizes[1:]:
                large = at[at[BATCH] == size]
                rows.append(batchnorm.table_row(label or "all runs", size, epoch, large))
                found = batchnorm.split(small, large)
                if found is None:
                    continue
                named.append(found.named)
                rest = accuracy_reading(batchnorm.recomputed(small), batchnorm.recomputed(large))
                ends = levels.of_runs(sizes[0], small), levels.of_runs(size, large)
                shared = (levels.stale_sentences(*ends) if levels.stale_at_both(*ends, found.drop, MIN_EFFECT)
                          else [])  # what both sizes lose, which their difference does not show
                details.append(" ".join([f"{batchnorm.sentence(found, f', epoch {epoch}{_where(label)}')} {rest}",
                                         *shared]))
                if epoch == read[0]:
                    comparisons.append(compare(f"batch {size}, epoch {epoch}{_where(label)}", f"batch {sizes[0]}",
                                               f"batch {size}", small, large,
                                               ("train_acc", "train_eval_acc", "val_acc", "val_acc_precise_bn")))
    if not details:
        return None
    outcome = "reproduced" if any(named) else "not reproduced"
    headline = (f"Batch-norm statistics that lag the weights lowered val_acc at the larger batches: {outcome}. "
                f"Read at epoch{'s' if len(read) > 1 else ''} {' and '.join(map(str, read))}; with the statistics "
                "recomputed on the training set for the current weights the accuracy is what the weights can do."
                + (" Remedies: more steps, a lower momentum (model.bn_momentum), or recomputing the statistics "
                   "before evaluating." if any(named) else ""))
    return Finding("Batch-norm statistics", outcome, headline, details, comparisons,
                   table=(batchnorm.table_header(), rows))
