"""The sweep's progress line: runs done, running and failed, elapsed time and an ETA."""
from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Callable, TextIO

import pyarrow.parquet as pq

from harness.store.layout import METRICS_FILE
from harness.store.run_files import inspect_run


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


def run_cost(run_seconds: float, epoch_seconds: list[float]) -> tuple[float, float] | None:
    """(a run's fixed seconds, its seconds per epoch) from its run_seconds and the epochs it trained in this command.
    A run's first epoch also builds and compiles the model (MobileNetV2 at 32 x 32 pixels: 20 s against 0.8 s for
    each later epoch, measured), so the rate is the later epochs' median and the fixed seconds are the rest of the
    run; None with one epoch, which cannot tell them apart."""
    if len(epoch_seconds) < 2:
        return None
    rate = statistics.median(epoch_seconds[1:])
    return max(0.0, run_seconds - rate * len(epoch_seconds)), rate


def epoch_seconds(run_dir: Path, after_epoch: int) -> list[float]:
    """The epoch_seconds of a finished run's epochs after `after_epoch` (those it trained in this command)."""
    try:
        table = pq.read_table(run_dir / METRICS_FILE, columns=["epoch", "epoch_seconds"]).to_pydict()
    except Exception:  # no metrics, a damaged file: the run measured nothing usable
        return []
    return [float(s) for e, s in zip(table["epoch"], table["epoch_seconds"]) if e > after_epoch and s is not None]


class Eta:
    """The sweep's ETA from what its finished runs measured: per cost class the seconds of an epoch after a run's
    first, and a run's fixed seconds (its start, the first epoch's compilation, the end-of-run probes) from every
    class. Until a finished run has two epochs, the seconds per epoch of whole runs (eta_seconds) stand in."""

    def __init__(self) -> None:
        # job -> (class, run_cost, run_seconds, epochs trained in this command)
        self._finished: dict[int, tuple[tuple, tuple[float, float] | None, float, int]] = {}
        self._held: dict[int, int] = {}  # job not started -> the epochs its run folder held already

    def left(self, num: int, key: tuple, run_dir: Path, epochs: int) -> tuple[tuple, int]:
        """(class, epochs left) of a job not started: its planned epochs less those its run folder already holds
        (an interrupted run resumed, a paused one continued: harness.store.fork), read once."""
        if num not in self._held:
            self._held[num] = int((inspect_run(run_dir)[0] or {}).get("epochs_completed") or 0)
        return key, max(0, epochs - self._held[num])

    def finished(self, num: int, key: tuple, run_dir: Path, record: dict) -> None:
        """Measure a finished job once (its files do not change after)."""
        if num not in self._finished and record.get("run_seconds"):
            after = int(record.get("resumed_from_epoch") or 0)
            seconds, epochs = float(record["run_seconds"]), int(record.get("epochs_completed") or 0) - after
            self._finished[num] = (key, run_cost(seconds, epoch_seconds(run_dir, after)), seconds, epochs)

    def seconds(self, pending: list[tuple[tuple, int]], running: list[tuple[tuple, int, float, int]],
                slots: int) -> float | None:
        """Seconds until the sweep ends: `pending` (class, epochs) not started; `running` (class, epochs left,
        seconds so far, epochs trained so far in this command); `slots` runs at once."""
        costs = [(key, cost) for key, cost, _, _ in self._finished.values() if cost is not None]
        if not costs:  # the stand-in: whole runs' seconds per epoch, the running ones' so far included
            whole: dict[tuple, tuple[float, int]] = {}
            measured = [(key, seconds, epochs) for key, _, seconds, epochs in self._finished.values()]
            for key, seconds, epochs in [*measured, *((key, spent, done) for key, _, spent, done in running)]:
                if seconds and epochs > 0:
                    total, count = whole.get(key, (0.0, 0))
                    whole[key] = (total + seconds, count + epochs)
            return eta_seconds(whole, [*pending, *((key, left) for key, left, _, _ in running)], slots)
        by_class: dict[tuple, list[float]] = {}
        for key, (_, rate) in costs:
            by_class.setdefault(key, []).append(rate)
        rates = {key: statistics.median(values) for key, values in by_class.items()}
        typical = statistics.median(rates.values())
        fixed = statistics.median(start for _, (start, _) in costs)
        work = sum(fixed + epochs * rates.get(key, typical) for key, epochs in pending)
        work += sum(left * rates.get(key, typical) + (max(0.0, fixed - spent) if reached == 0 else 0.0)
                    for key, left, spent, reached in running)
        jobs = len(pending) + sum(1 for _, left, _, _ in running if left > 0)
        return work / max(1, min(slots, jobs)) if jobs else 0.0


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
