"""What the two HTML pages (a sweep's report and the reports index) share: the Jinja environment they render
with (autoescaped, undefined names an error) and how they list a key's values."""
from __future__ import annotations

import functools
import math
from pathlib import Path

import jinja2
from markupsafe import Markup

_ENVIRONMENT = jinja2.Environment(loader=jinja2.PackageLoader("harness.report", "templates"), autoescape=True,
                                  undefined=jinja2.StrictUndefined)


def number(value, digits: int = 3) -> str:
    """A measured value in a table: `digits` decimals (a large one with none), or – when there is none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.{digits}f}"


_ENVIRONMENT.filters["fmt"] = number


def template(name: str) -> jinja2.Template:
    return _ENVIRONMENT.get_template(name)


@functools.lru_cache(maxsize=None)
def _study_environment(folder: Path) -> jinja2.Environment:
    """The page's environment, its templates searched in a study's folder first (a study's section imports the
    page's macros.html.j2)."""
    return _ENVIRONMENT.overlay(loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(folder)),
                                                            _ENVIRONMENT.loader]))


def section(name: str, folder: Path, context: dict) -> Markup:
    """A study's section of the report: its template `name`, in its `folder`, rendered with `context`."""
    return Markup(_study_environment(Path(folder)).get_template(name).render(**context))


def listed(values) -> str:
    """A key's distinct values, sorted (as text where they do not compare), missing ones left out: "8, 32, 64"."""
    unique = list(dict.fromkeys(v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))))
    try:
        unique.sort()
    except TypeError:
        unique.sort(key=str)
    return ", ".join(map(str, unique))
