"""The report's figures, by section: every plots module offers `figures(assessment)`, a list of (title, Figure,
caption) for what its data show, and SECTIONS says which modules fill which section, in order. Each figure is
embedded as a PNG. Files only: no TensorFlow."""
from __future__ import annotations

import base64
import io

from harness.report.plots import findings, scaling, sweep, tuning, why

SECTIONS = {  # section -> the modules whose figures it shows, in order
    "main": (findings, sweep),
    "why": (why,),
    "tuned": (tuning,),
    "scaling": (scaling,),
}


def figures(a, section: str = "main") -> list[tuple[str, object, str]]:
    """(title, Figure, caption) for every figure of a section, for an assessment."""
    return [drawn for module in SECTIONS[section] for drawn in module.figures(a)]


def png(fig) -> str:
    """The figure as a base64 PNG, for an <img src="data:...">."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def sections(a) -> tuple[list[dict], ...]:
    """The embedded figures ({title, png, caption}) of every section in SECTIONS' order (the main part, the Why
    section, the tuned study's and the scaling study's), for an assessment."""
    return tuple([{"title": title, "png": png(fig), "caption": caption} for title, fig, caption in figures(a, name)]
                 for name in SECTIONS)
