"""A stop a signal asked for, kept where the run's epochs can see it. A signal's handler raises at once, where the
process is (harness.launch.signals), and records the signal here too: a library that the exception passes through
may catch it (a Ctrl-C while a run built and traced its model was lost, and the run trained to its end), so the run
raises it again once its next epoch is saved."""
from __future__ import annotations

import signal


class Interrupted(KeyboardInterrupt):
    """A handled signal, raised where the process is, so every `except KeyboardInterrupt` path applies."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


requested: int | None = None  # the signal asked for and not yet acted on


def ask(signum: int) -> None:
    global requested
    requested = signum


def clear() -> None:
    """The run acted on it (it stopped, interrupted)."""
    global requested
    requested = None


def check() -> None:
    """Raise the signal asked for, once: Ctrl-C as KeyboardInterrupt, the others as Interrupted."""
    signum = requested
    clear()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    if signum is not None:
        raise Interrupted(signum)
