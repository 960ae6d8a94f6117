"""What the HTML pages (a sweep's report, its studies' sections and the reports index) share: the Jinja environment
they render with (autoescaped, undefined names an error, the `fmt` filter, `macros.html.j2`) and how they list a
key's values."""
from __future__ import annotations

import functools
import math
from pathlib import Path

import jinja2
from markupsafe import Markup

_ENVIRONMENT = jinja2.Environment(loader=jinja2.PackageLoader("harness.render", "templates"), autoescape=True,
                                  undefined=jinja2.StrictUndefined)


def number(value, digits: int = 3) -> str:
    """A measured value in a table: `digits` decimals (a large one with none), or – when there is none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.{digits}f}"


_ENVIRONMENT.filters["fmt"] = number


def template(name: str, folder: Path | None = None) -> jinja2.Template:
    """The template `name`: the kit's own, or one in `folder` (a study's section, the report's page), which may
    import the kit's macros.html.j2."""
    return (_ENVIRONMENT if folder is None else _environment_in(Path(folder))).get_template(name)


@functools.lru_cache(maxsize=None)
def _environment_in(folder: Path) -> jinja2.Environment:
    """The kit's environment, its templates searched in `folder` first."""
    return _ENVIRONMENT.overlay(loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(folder)),
                                                            _ENVIRONMENT.loader]))


def section(name: str, folder: Path, context: dict) -> Markup:
    """A study's section of the report: its template `name`, in its `folder`, rendered with `context`."""
    return Markup(template(name, folder).render(**context))


def listed(values) -> str:
    """A key's distinct values, sorted (as text where they do not compare), missing ones left out: "8, 32, 64"."""
    unique = list(dict.fromkeys(v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))))
    try:
        unique.sort()
    except TypeError:
        unique.sort(key=str)
    return ", ".join(map(str, unique))
