"""+study=recover's two choices, on the tuning slice only: which trials the confirmation runs on every seed, and which
confirmed trial is the recipe (the simplest that holds). Trials in (harness.studies.recover.reading.Trial), numbers
out."""
from __future__ import annotations

RULE = "rule"  # a trial's source: a published rule's recipe (harness.config.rules)


def to_confirm(ranked: list, confirm: int) -> list[int]:
    """The trials the confirmation runs on the other seeds, from `ranked` (best tune_acc first): the best `confirm`
    finished ones, and every finished rule besides (a published rule is measured on every seed, so that the recipe
    is chosen against it)."""
    done = [t for t in ranked if t.tune_acc is not None]
    best = [t.number for t in done[:confirm]]
    return best + [t.number for t in done if t.source == RULE and t.number not in best]


def simplest(candidates: list[tuple[int, float]], trials: list, tolerance: float) -> int | None:
    """The recipe among `candidates` (trial, mean tune_acc): of those within `tolerance` of the best mean, a rule
    before a searched recipe, then the fewest keys set, then the best mean (None without a candidate)."""
    if not candidates:
        return None
    top = max(tune for _, tune in candidates)
    near = [(k, tune) for k, tune in candidates if tune >= top - tolerance]
    return min(near, key=lambda c: (trials[c[0]].source != RULE, trials[c[0]].changed, -c[1], c[0]))[0]
