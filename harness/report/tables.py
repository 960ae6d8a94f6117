"""The report's tables as rows of strings, and the cell format the studies' sections share: the facets' verdicts,
the scaling study's points. Assessments in, cells out (harness.report.html renders them)."""
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
