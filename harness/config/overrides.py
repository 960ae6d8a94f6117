"""A job's command-line overrides with a recipe's in place (`with_recipe`): how a study puts a recipe (key -> value,
keyed as overrides) on one of the command's jobs. Plain lists and strings: a reading may use it too."""
from __future__ import annotations

from typing import Any


def with_recipe(job: list[str], recipe: dict[str, Any]) -> list[str]:
    """`job` with the recipe's overrides in place of its own for the same keys (the command's optimizer=adam where
    the recipe sets optimizer=adamw, say); a null value keeps the command's own."""
    keys = {key for key, value in recipe.items() if value is not None}
    return [o for o in job if o.lstrip("+~").split("=", 1)[0] not in keys] + \
        [f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in recipe.items()
         if value is not None]
