"""A job's command-line overrides with a recipe's in place (`with_recipe`): how a study puts a recipe (key -> value,
keyed as overrides) on one of the command's jobs; and what only a job's own overrides can tell (`check_batch_size`).
Plain lists and strings: a reading may use it too."""
from __future__ import annotations

from typing import Any

from harness.fields import ConfigError


def with_recipe(job: list[str], recipe: dict[str, Any]) -> list[str]:
    """`job` with the recipe's overrides in place of its own for the same keys (the command's optimizer=adam where
    the recipe sets optimizer=adamw, say); a null value keeps the command's own."""
    keys = {key for key, value in recipe.items() if value is not None}
    return [o for o in job if o.lstrip("+~").split("=", 1)[0] not in keys] + \
        [f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in recipe.items()
         if value is not None]


def check_batch_size(job: list[str], schedule) -> None:
    """A batch_size given beside a batch_schedule must be its first phase's (the schedule sets it; left out, the
    config's default is not a conflict)."""
    given = [o.split("=", 1)[1] for o in job if o.split("=", 1)[0] == "batch_size"]
    if schedule is not None and given and given[-1] != str(schedule[0][1]):
        shown = [list(p) for p in schedule]
        raise ConfigError("batch_size", int(given[-1]) if given[-1].isdigit() else given[-1], f"left out, or "
                          f"{schedule[0][1]}, beside batch_schedule={shown}, which sets the batch of each phase, the "
                          f"first's {schedule[0][1]}; or a batch_schedule whose first phase is at batch {given[-1]}")
