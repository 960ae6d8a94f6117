"""The report's figures, by section: every plots module offers `figures(assessment)`, a list of (title, Figure,
caption) for what its data show, and SECTIONS says which modules fill which section, in order. Each figure is
embedded as a PNG (harness.render.encode), rendered on two cores where there are two. Files only: no TensorFlow."""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import threading

from harness.assess.analysis import final_results
from harness.render.encode import png
from harness.render.plots import findings, sweep, why

SECTIONS = {  # section -> the modules whose figures it shows, in order
    "main": (findings, sweep),
    "why": (why,),
}


def figures(a, section: str = "main") -> list[tuple[str, object, str]]:
    """(title, Figure, caption) for every figure of a section, for an assessment; a sweep of many facets draws
    only those that decide what the report says (harness.assess.facets.shown)."""
    if a.drawn is not None:
        a = dataclasses.replace(a, df=a.drawn, final=final_results(a.drawn))
    return [drawn for module in SECTIONS[section] for drawn in module.figures(a)]


def sections(a, more: list[list] = ()) -> tuple[list[dict], ...]:
    """The embedded figures ({title, png, caption}) of every section in SECTIONS' order (the main part, the Why
    section), then of `more` ((title, Figure, caption) lists: a study's
    sections), for an assessment; rendered together."""
    drawn = [figures(a, name) for name in SECTIONS] + [list(figs) for figs in more]
    pngs = iter(rendered([fig for section in drawn for _, fig, _ in section]))
    return tuple([{"title": title, "png": next(pngs), "caption": caption} for title, _, caption in section]
                 for section in drawn)


def rendered(figs: list) -> list[str]:
    """png() of every figure, in order. With two cores or more, a spawned child (harness.render.encode) renders the
    later half while this process renders the first: drawing and encoding are most of a report's time (the main
    job's with probes, 1.5 s of which 1.06 s its 8 PNGs). The child starts before this process draws, so its start
    (0.3 s: Python and matplotlib) overlaps it. Should the child fail, or a figure not pickle (a formatter given a
    lambda), this process renders that half too."""
    if len(figs) < 2 or len(os.sched_getaffinity(0)) < 2:
        return [png(fig) for fig in figs]
    half = (len(figs) + 1) // 2
    try:
        sent = pickle.dumps(figs[half:])
    except Exception:  # noqa: BLE001 - an unpicklable artist: no child
        return [png(fig) for fig in figs]
    child = subprocess.Popen([sys.executable, "-m", "harness.render.encode"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    writer = threading.Thread(target=_send, args=(child, sent), daemon=True)  # a pipe holds only so much
    writer.start()
    first = [png(fig) for fig in figs[:half]]
    out = child.stdout.read()
    writer.join()
    later = json.loads(out) if child.wait() == 0 and out else None
    return first + (later if isinstance(later, list) and len(later) == len(figs) - half
                    else [png(fig) for fig in figs[half:]])


def _send(child, data: bytes) -> None:
    try:
        child.stdin.write(data)
        child.stdin.close()
    except (BrokenPipeError, OSError):  # the child died: the parent renders its half
        pass
