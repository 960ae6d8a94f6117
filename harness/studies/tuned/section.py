"""+study=tuned's section of the report: the learning rate chosen per batch size (its lines, figures.py) in
section.html.j2."""
from __future__ import annotations

from pathlib import Path

from harness.studies.study import Section
from harness.studies.tuned import figures

FOLDER = Path(__file__).resolve().parent


def section(a) -> Section:
    """The "Learning rate tuned per batch size" section of an assessment whose reading is its tunings."""
    return Section("section.html.j2", FOLDER, {"tunings": a.reading}, figures.figures(a))
