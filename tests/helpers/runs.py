"""What a test reads of a real run or sweep: its record, its metrics, the harness processes still running."""
from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pandas as pd
import psutil

NOT_COMPARED = ["run_id", "epoch_seconds", "samples_per_second"]


def record(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def metrics(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "metrics.parquet").drop(columns=NOT_COMPARED)


def harness_processes(marker: str) -> list[int]:
    """Live processes whose command line mentions `marker` (a sweep's folder)."""
    return [proc.pid for proc in psutil.process_iter(["cmdline"])
            if marker in " ".join(proc.info["cmdline"] or [])]


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
def frozen(pid: int, timeout: float = 120) -> Iterator[None]:
    """The process stopped (SIGSTOP) for the block, then continued: a signal sent to it meanwhile waits for it, so it
    lands where the process was frozen however long its sender takes on a loaded machine. The block starts once the
    process is stopped: SIGSTOP is delivered when the process next runs, and a signal sent before that (a lower
    number goes first) would be taken by its handler instead of waiting."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + timeout
        while _status(pid) != psutil.STATUS_STOPPED:
            if time.monotonic() > deadline:
                raise AssertionError(f"process {pid} did not stop")
            time.sleep(0.01)
        yield
    finally:
        with suppress(ProcessLookupError):  # killed meanwhile
            os.kill(pid, signal.SIGCONT)


def _status(pid: int) -> str:
    try:
        return psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        raise ProcessLookupError(pid) from None  # it ended before it could stop


def wait_for_signal(pid: int, signum: int, timeout: float = 120) -> None:
    """Until the process has `signum` pending (Linux's /proc/PID/status), e.g. one sent to it while frozen."""
    bit = 1 << (signum - 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        except FileNotFoundError:
            break  # it ended (killed) without it
        if (int(status["SigPnd"], 16) | int(status["ShdPnd"], 16)) & bit:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} was never sent {signal.Signals(signum).name}")


def cut_and_resumed(cfg, folder: Path, after: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the metrics of `cfg` interrupted after epoch `after`'s row, before its checkpoint, then resumed; the same
    run trained whole), less timing. The interrupted attempt's record and its partial writes (as a kill -9 leaves
    them) are checked on the way. Patches the epoch recorder within; no pytest fixture, so a subprocess with
    devices of its own (gpus=2) can call it."""
    from harness.run import checkpoint, train
    from harness.run.experiment import run_experiment
    from harness.store import layout

    folder = Path(folder)
    run_experiment(cfg, folder / "whole", run_id="s/0")
    assert not (folder / "whole" / layout.CHECKPOINT).exists()  # removed once the run is done
    original = train.EpochRecorder.on_epoch_end

    def interrupt(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == after - 1:
            raise KeyboardInterrupt  # after the epoch's row, before its checkpoint

    train.EpochRecorder.on_epoch_end = interrupt
    try:
        run_experiment(cfg, folder / "cut", run_id="s/0")
        raise AssertionError("the run was not interrupted")
    except KeyboardInterrupt:
        pass
    finally:
        train.EpochRecorder.on_epoch_end = original
    cut = record(folder / "cut")
    assert cut["status"] == "interrupted" and cut["epochs_completed"] == after
    assert checkpoint.saved_epoch(folder / "cut") == after - 1
    partial = [".metrics.parquet.x1.tmp", ".run.json.x2.tmp", ".checkpoint.npz.x3.tmp"]  # as a kill -9 leaves them
    for name in partial:
        (folder / "cut" / name).write_bytes(b"cut short")
    run_experiment(cfg, folder / "cut", run_id="s/0")
    done = record(folder / "cut")
    assert done["status"] == "completed" and done["resumed_from_epoch"] == after - 1
    assert not any((folder / "cut" / name).exists() for name in partial)
    timing = ["epoch_seconds", "samples_per_second"]
    return (pd.read_parquet(folder / "cut" / "metrics.parquet").drop(columns=timing),
            pd.read_parquet(folder / "whole" / "metrics.parquet").drop(columns=timing))
