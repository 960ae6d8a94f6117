"""Signals that end a command or a run: Ctrl-C (SIGINT), SIGTERM (schedulers, `timeout`, preemption) and SIGUSR2
(SLURM's warning before a time limit) are all handled as Ctrl-C is: runs record `interrupted` with their last
complete epoch, a partial report is written, the exit code is 128 + the signal (130, 143, 140), and the line
printed (`python -m harness.resume FOLDER`) resumes."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from harness.run import stop
from harness.run.stop import Interrupted

__all__ = ["HANDLED", "Interrupted", "deferred", "exit_code", "hold", "install"]
HANDLED = (signal.SIGTERM, signal.SIGUSR2)  # and SIGINT, as KeyboardInterrupt
_holding = False  # inside `deferred`, and after `hold`: a signal is recorded, not raised


def _raise(signum, frame) -> None:
    stop.ask(signum)  # in case a library the exception passes through catches it (harness.run.stop)
    if _holding:
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signum)


def install() -> None:
    """Turn HANDLED signals into Interrupted in this process (only the main thread can set handlers), and SIGINT
    into KeyboardInterrupt even when the process started with it ignored: a shell script's background job (`&`)
    ignores SIGINT, and its runs would then not stop when the launcher forwards Ctrl-C to them."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _raise)
        for signum in HANDLED:
            signal.signal(signum, _raise)


def hold() -> None:
    """The command has ended and its process ends with its own exit code: a signal from here on is recorded, not
    raised (it has nothing left to stop)."""
    global _holding
    _holding = True


@contextmanager
def deferred():
    """A handled signal's exception held until the block has ended, then raised: for a block that starts a child
    and records it, where a signal between the two would leave a child nobody stops (its run left `running`)."""
    global _holding
    outer, _holding = _holding, True
    try:
        yield
    finally:  # raised even where the block failed (a run that could not start): the signal comes first
        _holding = outer
        if not outer:
            stop.check()


def exit_code(err: KeyboardInterrupt) -> tuple[int, str]:
    """(128 + the signal, its name) for an interruption: Ctrl-C is SIGINT."""
    signum = getattr(err, "signum", signal.SIGINT)
    return 128 + signum, signal.Signals(signum).name
