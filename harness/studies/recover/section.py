"""+study=recover's section of the report: its tables as rows of cells (the verdict's numbers, the budget round,
the search's trials), its figures (harness.studies.recover.figures) and section.html.j2."""
from __future__ import annotations

from pathlib import Path

from harness.render.tables import fmt
from harness.studies.recover import figures
from harness.studies.recover.words import share_text
from harness.studies.study import Section

FOLDER = Path(__file__).resolve().parent


def section(a) -> Section:
    """The Recovery section of a recover sweep's assessment."""
    r = a.reading
    return Section("section.html.j2", FOLDER, {
        "recovery": r, "recovery_trials": recovery_rows(r), "recovery_keys": recipe_keys(r),
        "recovery_verdict": recovery_verdict_rows(r),
        "recovery_budget": recovery_budget_rows(r)}, figures.figures(a))


def recipe_keys(r) -> list[str]:
    """Every key a trial's recipe sets, the search's first, then the rules' own (beta_2, epsilon)."""
    return [] if r is None else list(dict.fromkeys(k for t in r.trials for k in t.recipe))


def recovery_rows(r) -> list[list[str]]:
    """The search's trials, best tune_acc first: rank, trial, its source (a rule's name), tune_acc, status, each key
    of the recipe ("–" where a rule leaves a key to the command)."""
    if r is None:
        return []
    keys = recipe_keys(r)
    return [[str(rank) if t.tune_acc is not None else "–", str(t.number), t.rule or t.source, fmt(t.tune_acc),
             t.status if t.cut_at is None else f"cut at epoch {t.cut_at} ({t.rungs[t.cut_at]:.3f})",
             *(_recipe_value(t.recipe.get(k)) if k in t.recipe else "–" for k in keys)]
            for rank, t in enumerate(r.ranked(), start=1)]


def recovery_verdict_rows(r) -> list[list[str]]:
    """The verdict's numbers: b and B as they are and the recipe at B on validation (mean [95% interval] over the
    paired seeds), the gap v(b) - v(recipe) and the share of the drop recovered."""
    v = None if r is None else r.verdict
    if v is None:
        return []

    def mean(e, sign: str = "") -> str:
        if e.value is None:
            return "–"
        return f"{e.value:{sign}.3f}" + ("" if e.low is None else f" [{e.low:{sign}.3f}, {e.high:{sign}.3f}]")

    share = share_text(v.share) + ("" if v.share is None or v.share_low is None
                                   else f" [{share_text(v.share_low)}, {share_text(v.share_high)}]")
    small = f"batch {r.small_batch} as is" if r.small_recipe is None else \
        f"batch {r.small_batch}, its own trial {r.small_recipe}"
    return [[small, mean(v.small), "", ""],
            [f"batch {r.large_batch} as is", mean(v.large), mean(v.drop, "+"), "0%"],
            [f"batch {r.large_batch}, trial {r.recipe}", mean(v.recipe), mean(v.gap, "+"), share]]


def recovery_budget_rows(r) -> list[list[str]]:
    """The budget round: each length's epochs, its multiple of E, mean tune_acc against b's, and wall time."""
    if r is None:
        return []
    rule = "" if r.budget_rule_trial is None else f" ({r.trials[r.budget_rule_trial].rule} rule)"
    return [[f"{x.epochs}{by}", f"{x.multiple:g}x", fmt(x.tune_acc), fmt(r.small_tune), str(x.runs),
             "yes" if x.reached else "no", "–" if x.wall_ratio is None else f"{x.wall_ratio:.2f}x"]
            for lengths, by in ((r.budget, " (recipe)" if rule else ""), (r.budget_rule, rule)) for x in lengths]


def _recipe_value(value) -> str:
    """A recipe's value as the command line gives it (0.0006488, not 0.001); null keeps the command's own."""
    if value is None:
        return "as given"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
