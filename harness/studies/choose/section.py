"""+study=choose's part of the report, in the verdict's place (section.html.j2): the target, and at every batch size
each candidate's steps to it on every seed it ran, the one the batch size goes on with first."""
from __future__ import annotations

import math
from pathlib import Path

from harness.studies.choose.words import recipe_text
from harness.studies.study import Section

FOLDER = Path(__file__).resolve().parent


def sections(a) -> list[Section]:
    found = a.reading
    return [Section("section.html.j2", FOLDER, {"choice": found, "rows": rows(found)}, place="verdict")]


def rows(found) -> list[list[str]]:
    """One row per candidate that ran: batch, candidate, recipe, steps to the target per seed (missed: a run that
    never reached it), the leader of its batch size marked."""
    out = []
    for size in found.sizes:
        leader = found.leader(size)
        for c in sorted(found.candidates[size], key=lambda c: (c is not leader, c.name)):
            steps = ", ".join("missed" if not math.isfinite(c.steps[seed]) else f"{c.steps[seed]:.0f}"
                              for seed in found.seeds if seed in c.steps)
            out.append([str(size), c.name + (" (its best)" if c is leader else ""), recipe_text(c.recipe), steps])
    return out
