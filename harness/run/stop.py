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


def reached_as(err: BaseException) -> str:
    """The note of a run interrupted by the signal asked for, which reached it as another exception (a library it
    passed through wrapped it)."""
    name = "SIGINT" if requested == signal.SIGINT else signal.Signals(requested).name
    said = str(err).splitlines()[0][:200] if str(err) else ""
    return f"interrupted by {name}, which reached the run as {type(err).__name__}: {said}"


def interruption() -> KeyboardInterrupt:
    """The signal asked for as the exception every `except KeyboardInterrupt` path stops on (Ctrl-C's own, the
    others Interrupted); cleared."""
    signum = requested
    clear()
    return KeyboardInterrupt() if signum in (None, signal.SIGINT) else Interrupted(signum)
