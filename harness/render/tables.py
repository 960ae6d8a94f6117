"""The report's tables as rows of strings (the facets' verdicts), and the cell format the studies' sections share.
Assessments in, cells out (harness.report.html renders them)."""
from __future__ import annotations

import math


def fmt(value, digits: int = 3) -> str:
    """A cell: '–' for nothing, a float to `digits` decimals, anything else as it prints."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def facet_rows(table) -> list[list[str]]:
    """The facets table of a sweep of many facets (harness.assess.facets), a row per facet."""
    if table is None:
        return []
    p = lambda value: "–" if value is None else f"{value:.2g}"  # noqa: E731
    return [[r.facet, fmt(r.small), fmt(r.large), f"{r.drop:+.3f}",
             "–" if r.interval is None else f"[{r.interval[0]:+.3f}, {r.interval[1]:+.3f}]", str(r.n_seeds),
             r.outcome, p(r.p_value), p(r.adjusted), "yes" if r.holds else "no"] for r in table.rows]
