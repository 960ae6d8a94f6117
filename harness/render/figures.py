"""The report's figures, by section: every plots module offers `figures(assessment)`, a list of (title, Figure,
caption) for what its data show, and SECTIONS says which modules fill which section, in order. Each figure is
embedded as a PNG, rendered on two cores where there are two. Files only: no TensorFlow."""
from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import sys
import threading

from harness.assess.analysis import final_results
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


def png(fig) -> str:
    """The figure as a base64 PNG, for an <img src="data:...">."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def sections(a, more: list[list] = ()) -> tuple[list[dict], ...]:
    """The embedded figures ({title, png, caption}) of every section in SECTIONS' order (the main part, the Why
    section), then of `more` ((title, Figure, caption) lists: a study's
    sections), for an assessment; rendered together."""
    drawn = [figures(a, name) for name in SECTIONS] + [list(figs) for figs in more]
    pngs = iter(rendered([fig for section in drawn for _, fig, _ in section]))
    return tuple([{"title": title, "png": next(pngs), "caption": caption} for title, _, caption in section]
                 for section in drawn)


def rendered(figs: list) -> list[str]:
    """png() of every figure, in order. With two cores or more, a forked child renders the later half while this
    process renders the first: drawing and encoding are most of a report's time (the main job's with probes,
    1.5 s of which 1.06 s its 8 PNGs, took 1.1 s so). Should the child fail, this process renders its half too."""
    if len(figs) < 2 or not _may_fork():
        return [png(fig) for fig in figs]
    half = (len(figs) + 1) // 2
    first = [png(figs[0])]  # before the fork: what drawing imports on first use is then loaded in both
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its half as JSON on the pipe, then out without running the parent's exit code
        code = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "w") as pipe:
                json.dump([png(fig) for fig in figs[half:]], pipe)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    first += [png(fig) for fig in figs[1:half]]
    with os.fdopen(read_end) as pipe:
        sent = pipe.read()
    _, status = os.waitpid(child, 0)
    later = json.loads(sent) if status == 0 and sent else [png(fig) for fig in figs[half:]]
    return first + later


def _may_fork() -> bool:
    """Whether to render in a forked child: on Linux (macOS's frameworks are not safe to use after a fork), with a
    second core, and with no other thread alive (a fork copies only the calling thread: a lock another one held
    would stay held in the child)."""
    return (sys.platform.startswith("linux") and len(os.sched_getaffinity(0)) >= 2
            and threading.active_count() == 1)
