"""+study=choose's part of the report, in the verdict's place (section.html.j2): "Which batch size?", a verdict box of
the answer, its command, its validation accuracy and its check; every batch size's best timed alone (a table and
figures.py); then the reading under headings of its own (how the answer was found, every batch size, the ramps, the
check) and every candidate's steps to the target by seed."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from harness.studies.choose import check_words, figures, words
from harness.studies.choose.words import recipe_text, seconds
from harness.studies.study import Section

FOLDER = Path(__file__).resolve().parent


def sections(a) -> list[Section]:
    found = a.reading
    box = [line for line in (words.validation_text(found), check_words.box_text(found)) if line]
    context = {"choice": found, "headline": words.headline(found), "box": box, "groups": words.groups(found),
               "formula": words.formula(found), "timed": timed_rows(found), "rows": rows(found),
               "time_interval": "" if found.answer is None else found.answer.base.interval.label}
    return [Section("section.html.j2", FOLDER, context, figures.figures(a), place="verdict")]


def timed_rows(found) -> list[list[str]]:
    """One row per batch size timed: its best, steps (median, range), seconds a step and samples a second (to the
    target, everything included), where a rerun on a new seed should fall, time to the target (median and the
    median's interval over the seeds) and validation at the target."""
    if found.answer is None:
        return []
    out = []
    for t in found.answer.timed:
        reached = [s for s in t.steps if math.isfinite(s)]
        steps = "never" if not reached else f"{float(np.median(reached)):.0f} ({min(reached):.0f}–" \
                                            f"{max(reached):.0f})" + ("" if t.reached_all else ", a seed missed")
        mark = " (the answer)" if t is found.answer.best else (" (as it is)" if t is found.answer.base else "")
        batch = words.schedule_text(t.candidate.recipe).split(" (")[0] if t.ramp else str(t.size)
        out.append([f"{batch}{mark}", recipe_text(t.candidate.recipe), steps, _per_step(t),
                    _number(t.throughput, ""), _prediction(t),
                    f"{seconds(t.median)} [{seconds(t.interval.low)}, {seconds(t.interval.high)}]",
                    "–" if t.val_acc is None else f"{t.val_acc:.3f}"])
    return out


def _per_step(t) -> str:
    """Its milliseconds a step; a ramp's at each of its batches in turn (32→128: 1.1 → 2.9 ms)."""
    if t.ramp and t.phase_seconds_per_step:
        rates = t.phase_seconds_per_step
        batches = list(dict.fromkeys(phase[1] for phase in json.loads(t.candidate.recipe["batch_schedule"])))
        text = " → ".join(_number(1000 * rate, "") for rate in rates) + " ms"
        return text + (f" (the target before batch {batches[len(rates)]})" if len(rates) < len(batches) else "")
    return _number(1000 * t.seconds_per_step, " ms")


def _number(value: float, unit: str) -> str:
    return "–" if not math.isfinite(value) else f"{value:,.3g}{unit}" if value < 1000 else f"{value:,.0f}{unit}"


def _prediction(t) -> str:
    """A rerun's prediction interval, or a dash with fewer than two seeds."""
    band = t.prediction
    return f"[{seconds(band.low)}, {seconds(band.high)}]" if band.claims else "–"


def rows(found) -> list[list[str]]:
    """One row per candidate that ran: batch, candidate, recipe, steps to the target per seed (missed: a run that
    never reached it; raced out: where it stopped), the leader of its batch size marked: its best, or where every
    candidate missed the target on the seed that chose, the closest (the grid's centre, never a best)."""
    out = []
    for size in found.sizes:
        leader, best = found.leader(size), found.best(size)
        for c in sorted(found.candidates[size], key=lambda c: (c is not leader, c.name)):
            steps = ", ".join(c.steps_text(seed) for seed in found.seeds if seed in c.steps)
            mark = "" if c is not leader else " (its best)" if c is best else " (the closest: none reached it)"
            out.append([str(size), c.name + mark, recipe_text(c.recipe), steps])
    return out
