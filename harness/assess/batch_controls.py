"""Findings on the controls of the batch-size study, each computed from the sweep's data: how much of the
epochs-matched large-batch drop remains with matched steps and a scaled learning rate (+study=controls), and
whether Hoffer et al.'s recipe closes it (+study=hoffer). Same conventions as harness.assess.findings.
"""
from __future__ import annotations

import pandas as pd

from harness.assess.analysis import BATCH
from harness.assess.findings import Finding, compare
from harness.assess.verdicts import MIN_EFFECT


def controls_finding(final: pd.DataFrame, varied: list[str]) -> Finding | None:
    """How much of the epochs-matched large-batch drop is left with matched steps and a scaled learning rate?"""
    if "budget" not in varied:
        return None
    arms = {
        "epochs-matched": final[final["budget"] == "epochs"],
        "steps-matched": final[(final["budget"] == "steps") & (final["lr_scaling"] == "none")],
        "steps-matched + LR scaling and warm-up": final[(final["budget"] == "steps") & (final["lr_scaling"] != "none")],
    }
    drops, details, comparisons = {}, [], []
    for name, runs in arms.items():
        sizes = sorted(runs[BATCH].unique())
        if len(sizes) < 2:
            continue
        small, large = (runs[runs[BATCH] == b] for b in (sizes[0], sizes[-1]))
        drops[name] = small["val_acc"].mean() - large["val_acc"].mean()
        comparisons.append(compare(name, f"batch {sizes[0]}", f"batch {sizes[-1]}", small, large))
        details.append(
            f"{name}: val_acc {small['val_acc'].mean():.3f} at batch {sizes[0]} vs {large['val_acc'].mean():.3f} at "
            f"batch {sizes[-1]} (drop {drops[name]:+.3f}); train_eval_acc {small['train_eval_acc'].mean():.3f} vs "
            f"{large['train_eval_acc'].mean():.3f}; final step {int(small['step'].max())} vs {int(large['step'].max())}."
        )
    base = drops.get("epochs-matched")
    if base is None or len(drops) < 2:
        return None
    last_name = list(drops)[-1]
    left = drops[last_name]
    if base < MIN_EFFECT:
        share = "there was no epochs-matched drop to explain"
    elif left <= 0:
        share = "none of it remains: the larger batch is as good or better"
    else:
        share = f"{left / base:.0%} of it remains"
    if left < MIN_EFFECT:
        outcome = "not reproduced"
    elif base >= MIN_EFFECT and left >= 0.5 * base:
        outcome = "reproduced"
    else:
        outcome = "inconclusive"
    headline = (f"A large-batch generalization gap that survives the controls: {outcome}. The epochs-matched drop "
                f"was {base:+.3f}; {last_name} it is {left:+.3f} ({share}).")
    return Finding("Controls: steps and learning rate", outcome, headline, details, comparisons)


HOFFER_PIECES = {"steps": "steps matched", "sqrt": "sqrt LR", "ghost": "ghost BN"}


def hoffer_finding(final: pd.DataFrame, varied: list[str]) -> Finding | None:
    """Hoffer et al.'s recipe (+study=hoffer): does each piece (steps matched to the small batch, sqrt learning-rate
    scaling, ghost batch norm), and do all three together, close the large batch's val_acc gap to the small one?"""
    arms = final["overrides"].map(lambda o: next((t.split("=", 1)[1] for t in str(o).split()
                                                   if t.startswith("+hoffer=")), None))
    if arms.isna().all() or final[BATCH].nunique() < 2:
        return None
    small_batch = final[BATCH].min()
    reference = final[final[BATCH] == small_batch]
    large = final[final[BATCH] > small_batch].assign(arm=arms)
    base = reference["val_acc"].mean()
    gaps, details, comparisons = {}, [], []
    for name, runs in sorted(large.groupby("arm"), key=lambda item: item[0].count("_")):
        pieces = [HOFFER_PIECES[p] for p in name.split("_")[1:] if p in HOFFER_PIECES] or ["nothing"]
        gaps[name] = base - runs["val_acc"].mean()
        label = f"batch {int(runs[BATCH].iloc[0])} + {' + '.join(pieces)}"
        comparisons.append(compare(label, f"batch {small_batch}", label, reference, runs))
        details.append(f"{label}: val_acc {runs['val_acc'].mean():.3f} vs {base:.3f} at batch {small_batch} "
                       f"(gap {gaps[name]:+.3f}); train_eval_acc {runs['train_eval_acc'].mean():.3f}; "
                       f"{int(runs['step'].max())} steps.")
    plain = next((g for n, g in gaps.items() if "_" not in n), None)
    full = next((g for n, g in gaps.items() if all(p in n for p in HOFFER_PIECES)), None)
    if plain is None or full is None:
        return None
    if plain < MIN_EFFECT:
        outcome, why = "inconclusive", "the plain large batch showed no gap to close"
    elif full < MIN_EFFECT:
        outcome, why = "reproduced", "the whole recipe closes it"
    else:
        outcome, why = "not reproduced", "a gap remains with the whole recipe"
    headline = (f"Hoffer's recipe closes the large-batch gap: {outcome}. The plain large batch trails batch "
                f"{small_batch} by {plain:+.3f} in val_acc, with the whole recipe by {full:+.3f} ({why}); "
                f"n = {len(reference)} run(s) per arm.")
    return Finding("Hoffer's recipe: steps, sqrt LR, ghost batch norm", outcome, headline, details, comparisons)
