"""The tables of the report's study sections, as rows of strings: the facets' verdicts, the scaling study's points,
a diagnosis's parts and arms, a recovery's trials. Assessments in, cells out (harness.report.html renders them)."""
from __future__ import annotations

import math


def fmt(value, digits: int = 3) -> str:
    """A cell: '–' for nothing, a float to `digits` decimals, anything else as it prints."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def scaling_rows(s) -> list[list[str]]:
    """The scaling section's table: one row per batch size."""
    from harness.assess.scaling import fmt as figures  # three significant figures, thousands spelled out

    if s is None:
        return []
    rows = []
    for p in s.points:
        val = "–" if p.val_acc is None else f"{p.val_acc:.3f}" + (
            "" if p.val_interval is None else f" ± {(p.val_interval[1] - p.val_interval[0]) / 2:.3f}")
        lr = "none reached" if p.lr is None else figures(p.lr) + (f" ({p.edge})" if p.edge else "")
        rows.append([str(p.batch), lr, figures(p.steps), figures(p.samples),
                     "–" if p.ratio is None else f"{p.ratio:.2f}", p.regime or "–",
                     "–" if p.resolution is None else f"{100 * p.resolution:.1f}%", val, figures(p.noise)])
    return rows


def facet_rows(table) -> list[list[str]]:
    """The facets table of a sweep of many facets (harness.assess.facets), a row per facet."""
    if table is None:
        return []
    p = lambda value: "–" if value is None else f"{value:.2g}"  # noqa: E731
    return [[r.facet, fmt(r.small), fmt(r.large), f"{r.drop:+.3f}",
             "–" if r.interval is None else f"[{r.interval[0]:+.3f}, {r.interval[1]:+.3f}]", str(r.n_seeds),
             r.outcome, p(r.p_value), p(r.adjusted), "yes" if r.holds else "no"] for r in table.rows]


def diagnosis_rows(d) -> list[list[str]]:
    """The diagnosis's parts table: part, the arm that measures it, value, interval, reading."""
    if d is None:
        return []
    rows = []
    for p in d.parts:
        e = p.estimate
        interval = "–" if e.low is None else f"[{e.low:+.3f}, {e.high:+.3f}]"
        by = "recomputed statistics" if p.name == "stale_statistics" else p.arm or "every combination of the arms"
        rows.append([p.name, by, "–" if e.value is None else f"{e.value:+.3f}", interval, e.reading])
    return rows


def recovery_rows(r) -> list[list[str]]:
    """The search's trials, best tune_acc first: rank, trial, tune_acc, status, each key of the recipe."""
    if r is None:
        return []
    keys = list(dict.fromkeys(k for t in r.trials for k in t.recipe))
    return [[str(rank) if t.tune_acc is not None else "–", str(t.number), fmt(t.tune_acc), t.status,
             *(_recipe_value(t.recipe.get(k)) for k in keys)]
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

    share = "–" if v.share is None else f"{v.share:.0%}" + (
        "" if v.share_low is None else f" [{v.share_low:.0%}, {v.share_high:.0%}]")
    small = f"batch {r.small_batch} as is" if r.small_recipe is None else \
        f"batch {r.small_batch}, its own trial {r.small_recipe}"
    return [[small, mean(v.small), "", ""],
            [f"batch {r.large_batch} as is", mean(v.large), mean(v.drop, "+"), "0%"],
            [f"batch {r.large_batch}, trial {r.recipe}", mean(v.recipe), mean(v.gap, "+"), share]]


def recovery_budget_rows(r) -> list[list[str]]:
    """The budget round: each length's epochs, its multiple of E, mean tune_acc against b's, and wall time."""
    if r is None:
        return []
    return [[str(x.epochs), f"{x.multiple:g}x", fmt(x.tune_acc), fmt(r.small_tune), str(x.runs),
             "yes" if x.reached else "no", "–" if x.wall_ratio is None else f"{x.wall_ratio:.2f}x"] for x in r.budget]


def diagnosis_arm_rows(d) -> list[list[str]]:
    """Each arm's mean val_acc, with moving and with recomputed batch-norm statistics, and how much of the moving
    statistics is still their start (bn_initial_weight)."""
    if d is None:
        return []
    batch = {"b": d.small_batch}
    names = {"b": "as is", "B": "as is"}
    return [[names.get(key, key.replace("_", " + ")), str(batch.get(key, d.large_batch)), fmt(v), fmt(v_precise),
             fmt(d.arm_weights.get(key, math.nan))] for key, (v, v_precise) in d.arm_values.items()]


def _recipe_value(value) -> str:
    """A recipe's value as the command line gives it (0.0006488, not 0.001); null keeps the command's own."""
    if value is None:
        return "as given"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
