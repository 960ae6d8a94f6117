"""The sweep's progress line: runs done, running and failed, elapsed time and an ETA."""
from __future__ import annotations

import sys
from typing import Callable, TextIO


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def terminal_progress(stream: TextIO | None = None) -> Callable[[str, bool], None]:
    """Progress on a terminal: one line rewritten in place; in a log or pipe, a line whenever the counts change."""
    stream = stream or sys.stdout
    last = {"counts": None}

    def show(line: str, final: bool) -> None:
        if stream.isatty():
            stream.write("\r\033[K" + line + ("\n" if final else ""))
        else:
            counts = line.split(" · elapsed")[0]
            if counts == last["counts"]:
                return
            last["counts"] = counts
            stream.write(line + "\n")
        stream.flush()

    return show
