"""The sweep's progress line: runs done, running and failed, elapsed time and an ETA."""
from __future__ import annotations

import sys
from typing import Callable, TextIO


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def cost_class(overrides: list[str]) -> tuple[str, ...]:
    """Jobs that differ only in their seed cost the same per epoch; a batch-8 epoch costs several times a batch-64
    one (more steps of the same per-step overhead), so each other setting is measured apart."""
    return tuple(sorted(o for o in overrides if not o.lstrip("+~").startswith("seed=")))


def eta_seconds(measured: dict[tuple, tuple[float, int]], left: list[tuple[tuple, float]], slots: int) -> float | None:
    """Seconds until the sweep ends: the epochs `left` (cost class, epochs) each at its class's measured seconds per
    epoch (`measured`: class -> (seconds, epochs) of its runs so far), a class not measured yet at the median of
    the others, shared by the `slots` that run at once. None before any epoch was measured; 0 with none left."""
    if not any(epochs for _, epochs in left):
        return 0.0
    rates = {key: seconds / epochs for key, (seconds, epochs) in measured.items() if epochs > 0}
    if not rates:
        return None
    known = sorted(rates.values())
    typical = known[len(known) // 2]
    work = sum(epochs * rates.get(key, typical) for key, epochs in left)
    return work / max(1, min(slots, len(left)))


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
