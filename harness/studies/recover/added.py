"""+study=recover's added seeds (`python -m harness.resume SWEEP --add-seeds N`, planned by rounds.added_jobs: on
each new seed the judging round's three runs): which seeds were added, and the command an undecided verdict prints.
Plain data in, text out."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any



def seeds(content: dict[str, Any] | None) -> list[int]:
    """The seeds added to the sweep after its command (sweep.json's `added_seeds`), in order."""
    return [int(seed) for addition in (content or {}).get("added_seeds", []) for seed in addition["seeds"]]


def command(folder: Path, judged: int, needed: int | None) -> str | None:
    """The line that adds the seeds an undecided verdict needs beyond the `judged` it has, in the same folder (None:
    no count)."""
    if needed is None:
        return None
    return shlex.join(["python", "-m", "harness.resume", str(folder), "--add-seeds", str(max(1, needed - judged))])
