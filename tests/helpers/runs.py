"""What a test reads of a real run or sweep: its record, its metrics, the harness processes still running."""
from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

NOT_COMPARED = ["run_id", "epoch_seconds", "samples_per_second"]


def record(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def metrics(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "metrics.parquet").drop(columns=NOT_COMPARED)


def harness_processes(marker: str, module: str = "") -> list[int]:
    """Live processes whose command line mentions `marker` (a sweep's folder), and `module` (harness.worker: the
    sweep's warm workers, where its runs train)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().decode(errors="ignore") if proc.name.isdigit() else ""
            if marker in line and module in line:
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def wait_for_epochs(run_dir: Path, epochs: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if record(run_dir)["epochs_completed"] >= epochs:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{run_dir} never reached epoch {epochs}")


@contextmanager
def frozen(pids: list[int]) -> Iterator[None]:
    """The processes stopped (SIGSTOP) for the block, then continued: a signal sent to them meanwhile waits for them,
    so it lands where they were frozen however long its sender takes on a loaded machine."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def wait_for_signal(pids: list[int], signum: int, timeout: float = 120) -> None:
    """Until one of the processes has `signum` pending (Linux's /proc/PID/status), e.g. forwarded to a frozen one."""
    bit = 1 << (signum - 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in pids:
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
            if (int(status["SigPnd"], 16) | int(status["ShdPnd"], 16)) & bit:
                return
        time.sleep(0.05)
    raise AssertionError(f"no process of {pids} was sent {signal.Signals(signum).name}")
