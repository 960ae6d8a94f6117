"""+study=diagnose's section of the report: its tables as rows of cells (the parts, the arms), its waterfall
(harness.studies.diagnose.figures) and section.html.j2."""
from __future__ import annotations

import math
from pathlib import Path

from harness.render.tables import fmt
from harness.studies.diagnose import figures
from harness.studies.diagnose.words import title
from harness.studies.study import Section

FOLDER = Path(__file__).resolve().parent


def section(a) -> Section:
    """The diagnosis section of a diagnose sweep's assessment."""
    d = a.reading
    return Section("section.html.j2", FOLDER, {
        "diagnosis": d, "diagnosis_title": title(d), "diagnosis_parts": diagnosis_rows(d),
        "diagnosis_arms": diagnosis_arm_rows(d)}, figures.figures(a))


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


def diagnosis_arm_rows(d) -> list[list[str]]:
    """Each arm's mean val_acc, with moving and with recomputed batch-norm statistics, and how much of the moving
    statistics is still their start (bn_initial_weight)."""
    if d is None:
        return []
    batch = {"b": d.small_batch}
    names = {"b": "as is", "B": "as is"}
    return [[names.get(key, key.replace("_", " + ")), str(batch.get(key, d.large_batch)), fmt(v), fmt(v_precise),
             fmt(d.arm_weights.get(key, math.nan))] for key, (v, v_precise) in d.arm_values.items()]
