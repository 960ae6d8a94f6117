"""+study=recover's command lines, from a sweep's files: the recipe as one run at B (its run's overrides less the seed,
the study and Hydra's), and, for an older sweep judged on the seeds that chose, the study again on the seeds that
would decide an undecided verdict (command.json's command, its folder left out); a sweep judged on fresh seeds gets
the line that adds those seeds to its folder. Files in, text out."""
from __future__ import annotations

import shlex
from typing import Any

from harness.assess.sweep import Sweep
from harness.store import command_file

NOT_COPIED = ("seed=", "study=", "hydra.", "recover.", "probes=", "pause_epoch=", "pause_when=")  # left out of
# the recipe's command line (+ stripped; probes and the pause at a rung: the study's, not the recipe)


def more_seeds(sweep: Sweep, seeds: list[int], needed: int | None) -> str | None:
    """The command that made an older sweep, judged on the seeds that chose (command.json), on the `needed` seeds
    that would decide its verdict, its own first: a sweep of its own, where the same search runs (None: no command
    recorded, or no count)."""
    made = command_file.read(sweep.folder)
    if made is None or needed is None:
        return None
    more = [*seeds, *(s for s in range(max(seeds) + needed + 1) if s not in seeds)][:max(needed, len(seeds))]
    kept = [a for a in made.argv if not a.startswith((*command_file.FOLDER_KEYS, "seed="))]
    flag = [a for a in kept if a in ("-m", "--multirun")]
    return command_file.python_line([*(a for a in kept if a not in flag), f"seed={','.join(map(str, more))}",
                                     *(flag or ["-m"])])


def recipe_command(sweep: Sweep, plan: dict[str, Any], best: int | None) -> str | None:
    """The best trial as a command line at B: its run's overrides less the seed, the study and Hydra's."""
    if best is None:
        return None
    job = next((num for num, arm in plan["arms"].items() if arm == f"trial_{best}"), None) or next(
        (job["job"] for job in (sweep.plan or {}).get("jobs", []) if job.get("arm") == f"trial_{best}"), None)
    overrides = next((r.get("overrides") or [] for r in sweep.records if str(r["job"]) == job), [])
    kept = [o for o in overrides if not o.lstrip("+~").startswith(NOT_COPIED)]
    return shlex.join(["python", "-m", "harness", *kept])


def add_seeds(folder, judged: int, needed: int | None) -> str | None:
    """The line that adds to the sweep's folder the judging seeds an undecided verdict needs beyond the `judged` it
    has (python -m harness.resume --add-seeds: rounds.added_jobs says what runs on them); None: no count."""
    if needed is None:
        return None
    return shlex.join(["python", "-m", "harness.resume", str(folder), "--add-seeds", str(max(1, needed - judged))])
