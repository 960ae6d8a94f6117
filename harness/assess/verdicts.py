"""Verdicts computed from the data: was "larger batch -> lower val_acc" reproduced, and what did train accuracy do?

Rules (a difference of MIN_EFFECT accuracy, one point, is the smallest effect worth a claim):
- two or more seeds at both ends: a 95% Welch interval for val_acc(smallest batch) - val_acc(largest batch);
  reproduced when the interval lies above 0 and the mean drop is at least MIN_EFFECT; not reproduced when the
  interval lies below EQUIVALENCE_MARGIN (a drop of more than two points is ruled out) and the mean drop is
  under MIN_EFFECT; inconclusive otherwise (the seeds cannot tell).
- one seed: no interval exists. Reproduced when the drop is at least SINGLE_SEED_EFFECT and val_acc falls
  with batch size overall (Spearman rho < 0), not reproduced when there is no drop, inconclusive otherwise;
  the verdict always says n = 1 and that it is indicative only.
- runs at chance: when no compared run (smallest and largest batch) reaches a best val_acc of chance + CHANCE_MARGIN
  (chance = 1 / number of classes; the validation set is class-balanced), they did not learn, and the verdict is
  inconclusive whatever the numbers.
- diverged runs (loss NaN/inf) are a result: they have no final val_acc, so they are not in the numbers, and the
  verdict names the batch sizes that diverged and the epoch. Runs that did not reach `target_train_loss` are
  named too: for them the comparison is not loss-matched.
- the learning rate is the verdict's condition: when every batch size compared trained at one learning rate, the
  claim says so ("... at one learning rate for every batch size"), since a learning rate scaled or tuned for the
  larger batch may keep its accuracy, which these runs do not test; otherwise it names each side's.

A spread is written at its number: "0.927 ± 0.004 sd" (the standard deviation over seeds), "[+0.06, +0.12]"
(a 95% interval).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
from scipy import stats

from harness.assess import batchnorm, levels
from harness.assess.analysis import BATCH, num_classes
from harness.assess.intervals import welch_interval
from harness.store.run_files import FINISHED

MIN_EFFECT = 0.01
EQUIVALENCE_MARGIN = 0.02
SINGLE_SEED_EFFECT = 0.02
# A run learned when its best val_acc is at least chance + CHANCE_MARGIN (0.20 with 10 classes).
CHANCE_MARGIN = 0.10
CLAIM = "Larger batches gave lower validation accuracy"


@dataclass
class Verdict:
    """A claim judged from the data: what it is about, its outcome, a headline and the numbers behind it."""

    subject: str                      # a batch-size verdict's facet, or the suspect a finding is about
    outcome: str                      # reproduced | not reproduced | inconclusive
    headline: str
    details: list[str] = field(default_factory=list)
    comparisons: list = field(default_factory=list)  # findings.Comparison: treated beside reference, to plot
    table: tuple[list[str], list[list[str]]] | None = None  # (header, rows) of numbers the report shows as a table


@dataclass
class BatchVerdict(Verdict):
    n_seeds: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    effect: float = float("nan")      # mean final val_acc, smallest minus largest batch
    interval: tuple[float, float] | None = None
    rho: float = float("nan")
    setting: list[str] | None = None  # where it shows a drop: the overrides its runs share (not batch size or seed)
    next_steps: list[tuple[str, str]] = field(default_factory=list)  # (study, command) its details name: what
    # splits this drop on its setting (+study=diagnose), what searches the recipe that keeps b's accuracy (recover)


def _pm(values: pd.Series) -> str:
    """'0.927 ± 0.004 sd': the mean and the standard deviation over seeds ('0.927' for one)."""
    return f"{values.mean():.3f}" + (f" ± {values.std(ddof=1):.3f} sd" if len(values) > 1 else "")


def _learning_rates(small: pd.DataFrame, large: pd.DataFrame, small_b: int, large_b: int) -> tuple[str, list[str]]:
    """(what the claim adds, sentences): the condition the drop was measured under, each side's peak learning
    rate. One rate for every batch size is the usual reading of the claim, and only that is what it shows."""
    if "peak_lr" not in small or "peak_lr" not in large:
        return "", []
    rates = small["peak_lr"].dropna(), large["peak_lr"].dropna()
    if rates[0].empty or rates[1].empty:
        return "", []
    low, high = (float(r.mean()) for r in rates)
    if all(math.isclose(value, low, rel_tol=1e-6) for value in (*rates[0], *rates[1])):
        return f" at one learning rate ({low:.3g}) for every batch size", []
    return "", [f"The learning rate differed with the batch: {low:.3g} at batch {small_b}, {high:.3g} at batch "
                f"{large_b}."]


def batch_size_verdict(final: pd.DataFrame, facet: str = "all runs", runs: pd.DataFrame | None = None) -> BatchVerdict:
    """The verdict for one facet: `final` holds its completed runs (one row per run, see analysis.final_results),
    `runs` all its runs (analysis.runs_table), so diverged and unfinished runs are named, not dropped silently."""
    sizes = sorted(final[BATCH].unique().tolist()) if len(final) else []
    runs = final if runs is None else runs
    target_note, target_line = _target_lines(final)
    notes = [n for n in (_divergence_note(runs, sizes), target_note) if n]
    unfinished = _unfinished_note(runs)
    if len(sizes) < 2:
        return BatchVerdict(facet, "inconclusive", " ".join([
            f"{CLAIM}: inconclusive. Cannot be judged: needs at least two batch sizes with completed runs; found "
            f"{len(sizes)}" + (f"; runs without a result: {unfinished}." if unfinished else "."), *notes]),
            batch_sizes=sizes)
    small, large = (final[final[BATCH] == b] for b in (sizes[0], sizes[-1]))
    k = num_classes(final)
    chance, compared = 1.0 / k, pd.concat([small, large])
    ends = levels.of_runs(sizes[0], small), levels.of_runs(sizes[-1], large)
    both_stale = levels.stale_at_both(*ends, ends[0].val_acc - ends[1].val_acc, MIN_EFFECT)
    shared = levels.stale_sentences(*ends) if both_stale else []  # a cause both sizes share, said first
    if (compared["best_val_acc"] < chance + CHANCE_MARGIN).all():
        best = "; ".join(f"batch {b} {_span(r['best_val_acc'])}" for b, r in final.groupby(BATCH))
        return BatchVerdict(facet, "inconclusive", " ".join([
            f"{CLAIM}: inconclusive. The runs compared did not learn above chance: the best val_acc of every run at "
            f"batch {sizes[0]} and {sizes[-1]} was {_span(compared['best_val_acc'])}, below "
            f"{chance + CHANCE_MARGIN:.2f} (chance {chance:.2f} = 1/{k} classes, plus a margin of "
            f"{CHANCE_MARGIN:.2f}), so they say nothing about batch size.", *shared, *notes]),
            details=[f"Best-epoch val_acc by batch size: {best}.", *filter(None, [target_line])], batch_sizes=sizes)
    n_seeds = int(final.groupby(BATCH).size().min())
    effect = float(small["val_acc"].mean() - large["val_acc"].mean())
    rho = float(stats.spearmanr(final[BATCH], final["val_acc"]).statistic) if final["val_acc"].nunique() > 1 else 0.0
    outcome, interval, evidence = _decide(small["val_acc"], large["val_acc"], effect, rho, n_seeds)
    stale = batchnorm.split(small, large)
    condition, rates = _learning_rates(small, large, sizes[0], sizes[-1])
    headline = " ".join([f"{CLAIM}{condition}: {outcome}.", *notes,
        f"Final val_acc {_pm(small['val_acc'])} at batch {sizes[0]} vs {_pm(large['val_acc'])} at batch {sizes[-1]} "
        f"(drop {effect:+.3f}); Spearman rho over {len(sizes)} batch sizes {rho:+.2f}; {evidence}.", *rates,
        *([f"Batch-norm statistics that lag the weights explain {min(stale.stale / stale.drop, 1):.0%} of the drop "
           "(below)."] if stale is not None and stale.named else []), *shared])
    details = [
        f"At each run's best epoch: val_acc {_pm(small['best_val_acc'])} at batch {sizes[0]} vs "
        f"{_pm(large['best_val_acc'])} at batch {sizes[-1]} "
        f"(drop {small['best_val_acc'].mean() - large['best_val_acc'].mean():+.3f}).",
        *_train_accuracy_lines(small, large, sizes[0], sizes[-1]),
        *_chance_lines(final, chance, k),
        *filter(None, [target_line]),
        *([f"Runs without a result, not in these numbers: {unfinished}."] if unfinished else []),
    ]
    return BatchVerdict(facet, outcome, headline, details, n_seeds=n_seeds, batch_sizes=sizes, effect=effect,
                        interval=interval, rho=rho)


def confounded_verdict(sizes: list[int], keys: list[str]) -> BatchVerdict:
    """Batch size varied only together with other keys (each combination holds one batch size)."""
    return BatchVerdict("all runs", "inconclusive", (
        f"{CLAIM}: inconclusive. Batch size ({', '.join(map(str, sizes))}) varies only together with "
        f"{', '.join(keys)}: every combination holds one batch size, so its effect cannot be told apart from "
        "theirs. Sweep batch size within a combination to judge it."), batch_sizes=sizes)


def _decide(small: pd.Series, large: pd.Series, effect: float, rho: float, n_seeds: int):
    """(outcome, interval or None, evidence text) by the rules in the module docstring."""
    if min(len(small), len(large)) >= 2:
        interval = welch_interval(small.to_numpy(), large.to_numpy())
        if interval[0] > 0 and effect >= MIN_EFFECT:
            outcome = "reproduced"
        elif interval[1] < EQUIVALENCE_MARGIN and effect < MIN_EFFECT:
            outcome = "not reproduced"
        else:
            outcome = "inconclusive"
        return outcome, interval, (f"95% interval of the drop [{interval[0]:+.3f}, {interval[1]:+.3f}], "
                                   f"n = {n_seeds} seeds per batch size")
    if effect >= SINGLE_SEED_EFFECT and rho < 0:
        outcome = "reproduced"
    elif effect <= 0:
        outcome = "not reproduced"
    else:
        outcome = "inconclusive"
    return outcome, None, ("n = 1 seed: no spread can be estimated, so this is indicative only "
                           "(sweep seed=0,1,2 for a claim)")


def _span(values: pd.Series) -> str:
    low, high = f"{values.min():.3f}", f"{values.max():.3f}"
    return low if low == high else f"{low} to {high}"


def _epochs(values: pd.Series) -> str:
    epochs = sorted({int(e) for e in values})
    return ("epoch " if len(epochs) == 1 else "epochs ") + ", ".join(map(str, epochs))


def _divergence_note(runs: pd.DataFrame, compared: list[int]) -> str | None:
    """Which batch sizes diverged and when; diverged runs have no final val_acc, so say what is compared instead."""
    diverged = runs[runs["status"] == "diverged"]
    if diverged.empty:
        return None
    parts = []
    for size, group in diverged.groupby(BATCH):
        total = int((runs[BATCH] == size).sum())
        share = f" in {len(group)} of {total} runs" if total > 1 else ""
        parts.append(f"batch {size} diverged{share} (loss became NaN/inf at {_epochs(group['epochs_completed'])})")
    text = "; ".join(parts)
    lost = set(runs[BATCH]) - set(compared)
    scope = "so this verdict leaves them out"
    if len(compared) >= 2 and lost:
        without = ", ".join(map(str, sorted(lost)))
        scope = f"so this verdict covers batch {compared[0]} to {compared[-1]} only, without batch {without}"
    return (f"{text[0].upper()}{text[1:]}: training failed there (a result, not a crash); diverged runs have no "
            f"final val_acc, {scope}.")


def _target_lines(final: pd.DataFrame) -> tuple[str | None, str | None]:
    """With target_train_loss set: a headline sentence when some batch size missed it, and a detail line that
    says per batch size whether and at which epoch the target was reached."""
    if "target_train_loss" not in final.columns or final["target_train_loss"].isna().all():
        return None, None
    target = float(final["target_train_loss"].dropna().iloc[0])
    parts, missed = [], []
    for size, runs in final.groupby(BATCH):
        reached = runs["target_reached_at_epoch"].dropna()
        if len(reached) == len(runs):
            parts.append(f"batch {size} reached it at {_epochs(reached)}")
            continue
        missed.append(f"batch {size} ({len(runs) - len(reached)} of {len(runs)} run(s))")
        ended = f"ending at train_eval_loss {_pm(runs.loc[runs['target_reached_at_epoch'].isna(), 'train_eval_loss'])}"
        parts.append(f"batch {size} did not reach it in {int(runs['epoch'].max())} epochs ({ended})" if reached.empty
                     else f"batch {size} reached it in {len(reached)} of {len(runs)} runs (at {_epochs(reached)}; "
                          f"the others {ended})")
    detail = f"target_train_loss {target:g} (post-epoch train loss): " + "; ".join(parts) + "."
    headline = None if not missed else (
        f"Not loss-matched: target_train_loss {target:g} was not reached by {', '.join(missed)}, so there val_acc "
        f"is compared at the epoch limit, not at the same training loss.")
    return headline, detail


def _chance_lines(final: pd.DataFrame, chance: float, k: int) -> list[str]:
    """Batch sizes whose runs all stayed at chance: a failure to train, not a generalization gap."""
    stuck = [size for size, runs in final.groupby(BATCH) if (runs["best_val_acc"] < chance + CHANCE_MARGIN).all()]
    return [f"Batch {', '.join(map(str, stuck))} did not learn above chance (best val_acc below "
            f"{chance + CHANCE_MARGIN:.2f}; chance {chance:.2f} = 1/{k} classes): there a lower val_acc is a failure "
            f"to train, not a generalization gap."] if stuck else []


def _unfinished_note(runs: pd.DataFrame) -> str:
    """'batch 16: 1 failed (URLError), ...' for the runs that are neither completed nor diverged."""
    rest = runs[~runs["status"].isin(FINISHED)]
    parts = []
    for (size, status), group in rest.groupby([BATCH, "status"]):
        errors = group["error_type"].dropna()
        parts.append(f"batch {size}: {len(group)} {status}" + (f" ({errors.iloc[0]})" if len(errors) else ""))
    return ", ".join(parts)


def _train_accuracy_lines(small: pd.DataFrame, large: pd.DataFrame, small_b: int, large_b: int) -> list[str]:
    """Which moved, train or validation accuracy; for a model with batch norm, first how much of the drop its
    stale statistics explain, then the same reading on the accuracies with recomputed statistics."""
    stale = batchnorm.split(small, large)
    if stale is None:
        return [train_accuracy_note(small, large, small_b, large_b)]
    rest = train_accuracy_note(batchnorm.recomputed(small), batchnorm.recomputed(large), small_b, large_b)
    return [batchnorm.sentence(stale), f"With the statistics recomputed: {rest}"]


STEPS_MATCHED = 0.99  # the larger batch took at least this share of the smaller one's updates: steps-matched


def accuracy_reading(small: pd.DataFrame, large: pd.DataFrame) -> str:
    """The rule train_accuracy_note applies: under-training (fewer steps, or worse fit per step when the steps are
    matched), a widened gap, or neither (no numbers)."""
    val_drop = small["val_acc"].mean() - large["val_acc"].mean()
    train_drop = small["train_eval_acc"].mean() - large["train_eval_acc"].mean()
    if val_drop < MIN_EFFECT:
        return "Validation accuracy did not fall with batch size."
    if train_drop >= val_drop / 2 and large["step"].mean() >= STEPS_MATCHED * small["step"].mean():
        return ("Train accuracy fell too, at as many optimizer steps: the larger batch fit the training data less "
                "well per update, so most of the validation drop is under-fitting, not a generalization gap.")
    if train_drop >= val_drop / 2:
        return ("Train accuracy fell too, so most of the validation drop is under-training (fewer optimizer steps in "
                "the same epochs), not a generalization gap. Compare at matched steps (see val_acc vs steps).")
    if large["gap"].mean() - small["gap"].mean() >= MIN_EFFECT:
        return "Train accuracy held while validation accuracy fell: the gap widened, a generalization gap."
    return "Both moved a little; neither under-training nor a widened gap stands out."


def train_accuracy_note(small: pd.DataFrame, large: pd.DataFrame, small_b: int, large_b: int) -> str:
    """Say which moved, train or validation accuracy, so under-training is not read as a generalization gap."""
    numbers = (
        f"Train accuracy after the final epoch (train_eval_acc) was {small['train_eval_acc'].mean():.3f} at batch "
        f"{small_b} and {large['train_eval_acc'].mean():.3f} at batch {large_b}; the gap train_eval_acc - val_acc "
        f"went from {small['gap'].mean():+.3f} to {large['gap'].mean():+.3f}."
    )
    return f"{numbers} {accuracy_reading(small, large)}"
