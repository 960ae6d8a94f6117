"""The launch wing's process helpers: a child that dies with the command, a signal to a child's whole session, a
process that yields the CPU to the runs. Every process the command starts (runs, warm workers, the tracking
process) is started in a session of its own, so the terminal's Ctrl-C reaches the command alone and the command
decides what each child gets."""
from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import psutil


DIE_WITH = "HARNESS_DIE_WITH"  # in a child's environment: the pid of the command it is to die with


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (this process's by default) for a child that is to die with this process: the harness entry point it
    runs arms that itself, first thing (`die_with_parent`). Not a preexec_fn: with one, every child's start ran
    Python's at-fork hooks in the command, and a SIGTERM whose handler raised inside one was lost and left logging's
    lock taken, which hung the command at its sweep's end (CI: the SIGTERM stress test)."""
    return {**(os.environ if env is None else env), DIE_WITH: str(os.getpid())}


def die_with_parent() -> None:
    """In a process the command started with `child_env`: it is killed when the command dies, even by kill -9
    (Linux), and at once if the command died before this ran. Its own children inherit none of it."""
    parent = os.environ.pop(DIE_WITH, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        return
    if os.getppid() != int(parent):  # the command died before the line above: no signal would come
        os.kill(os.getpid(), signal.SIGKILL)


def wait_for_any(processes: list[subprocess.Popen], pipes: list, timeout: float) -> bool:
    """Return once one of `processes` has exited or one of `pipes` has something to read (a warm worker's reply):
    True; or after `timeout` seconds: False. A process's exit is watched through its pidfd (Linux 5.3 on); where
    there is none this only waits out the timeout for it."""
    handles = []
    try:
        for process in processes:
            try:
                handles.append(os.pidfd_open(process.pid))
            except (AttributeError, OSError):  # not Linux, or the process is gone (its exit is read at once)
                if process.poll() is not None:
                    return True
        return bool(select.select([*handles, *pipes], [], [], timeout)[0])
    finally:
        for handle in handles:
            os.close(handle)


def signal_group(process: subprocess.Popen, sig: int) -> None:
    """`sig` to the process's whole group (its session: the run and any child of it)."""
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def lower_priority(niceness: int) -> None:
    """This process's niceness, and its autogroup's: where the kernel groups processes by session (Linux's
    autogroup, on by default), the CPU is shared between sessions first, and a process's own niceness counts only
    within its session. Raising priority again may be refused to an unprivileged process: then it goes on as it
    is."""
    try:
        psutil.Process().nice(niceness)
    except psutil.Error:
        pass
    try:
        Path("/proc/self/autogroup").write_text(str(niceness))
    except OSError:  # not Linux, or no autogroup
        pass
