"""+study=recover's command lines, from a sweep's files: the recipe as one run at B (its run's overrides less the seed,
the study and Hydra's), and the study again on the seeds that would decide an undecided verdict (command.json's
command, its folder left out). Files in, text out."""
from __future__ import annotations

import shlex
from typing import Any

from harness.assess.sweep import Sweep
from harness.store import command_file

NOT_COPIED = ("seed=", "study=", "hydra.", "recover.")  # left out of the recipe's command line (+ stripped)


def more_seeds(sweep: Sweep, seeds: list[int], needed: int | None, judged: bool = False) -> str | None:
    """The command that made the sweep (command.json) with the seeds that would decide its verdict: `judged` (the
    recipe judged on fresh seeds), the same seeds choosing and recover.judge=`needed` fresh ones judging; else (an
    older sweep, judged on the seeds that chose) on `needed` seeds, its own first. A sweep of its own, where the same
    search runs (None: no command recorded, or no count)."""
    made = command_file.read(sweep.folder)
    if made is None or needed is None:
        return None
    if judged:
        kept = [a for a in made.argv if not a.startswith((*command_file.FOLDER_KEYS, "recover.judge="))]
        flag = [a for a in kept if a in ("-m", "--multirun")]
        return command_file.python_line([*(a for a in kept if a not in flag), f"recover.judge={needed}",
                                         *(flag or ["-m"])])
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
