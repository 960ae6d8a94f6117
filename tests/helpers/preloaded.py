"""`python -m harness ARGS` for the tests, forked from an interpreter that has already imported what a command's main
process imports (Hydra, pandas, matplotlib and the harness), instead of a fresh interpreter paying for those
imports each time: about 2 CPU-seconds a command on the 2-core CI machine.

The forked command is what a fresh `python -m harness ARGS` is: its own process with its own working directory
(first on sys.path, as `python -m` puts it), environment and argv, stdin from /dev/null, stdout and stderr to their
own files, its exit code as subprocess reports it, and its end by `os._exit`, as harness/__main__.py always ends.
It shares with the other commands only the modules imported before the fork, none of which reads the environment
or the working directory in its top-level code (tests/test_preloaded.py). A command whose environment differs from
the server's in anything else than the variables read at run time (`AT_RUN_TIME`: PYTHONPATH, thread counts and
libraries' settings are read at start or import) runs in a fresh process, as do the commands the tests signal or
watch themselves (the tests start those).

Protocol: the server (`python -m tests.helpers.preloaded NAME`, one per pytest process, dying with it) listens on an
abstract Unix socket; a request is one JSON line {"args", "cwd", "env", "out", "err"}; the server forks a process
that forks the command and answers {"pid"} at once and {"returncode"} once the command has ended (negative: the
signal that ended it).
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
# what `python -m harness` imports before and while it plans (harness.launch.cli, Hydra and the launcher plugin),
# and what it reads or writes after the runs (the studies' readings, the report and its figures)
PRELOAD = ("harness.launch.cli", "harness.launch.processes", "hydra_plugins.harness_launcher.launcher",
           "harness.studies.diagnose.reading", "harness.report.html", "matplotlib.pyplot")
# variables a command may set or change without a fresh process: read when the command runs, not at import
AT_RUN_TIME = ("HARNESS_", "HYDRA_", "MLFLOW_", "PYTEST_", "TF_", "KERAS_", "XLA_", "JAX_", "CUDA_", "SLURM_",
               "SUBMITIT_")


class Server:
    """The client side: one preloaded server for this process, started on first use."""

    def __init__(self):
        self.name = f"harness-preloaded-{os.getpid()}"  # an abstract socket: "\0" + name
        self.env = dict(os.environ)
        self.process = subprocess.Popen([sys.executable, "-m", "tests.helpers.preloaded", self.name], cwd=REPO,
                                        env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the preloaded harness server did not start")

    def forkable(self, env: dict[str, str]) -> bool:
        """Whether a command with this environment starts as it would in a fresh interpreter."""
        changed = {key for key in env.keys() | self.env.keys() if env.get(key) != self.env.get(key)}
        return self.process.poll() is None and all(key.startswith(AT_RUN_TIME) for key in changed)

    def run(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "harness", *args]
        with tempfile.TemporaryDirectory() as folder, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            out, err = Path(folder) / "stdout", Path(folder) / "stderr"
            conn.connect("\0" + self.name)
            conn.sendall((json.dumps({"args": list(args), "cwd": str(Path(cwd).resolve()), "env": env,
                                      "out": str(out), "err": str(err)}) + "\n").encode())
            conn.settimeout(timeout)
            replies = conn.makefile()
            pid = json.loads(replies.readline())["pid"]
            try:
                returncode = json.loads(replies.readline())["returncode"]
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(argv, timeout, out.read_text(), err.read_text()) from None
            return subprocess.CompletedProcess(argv, returncode, out.read_text(), err.read_text())

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


_server: Server | None = None


def server() -> Server:
    """This process's server, started on first use."""
    global _server
    if _server is None:
        _server = Server()
    return _server


def forkable(env: dict[str, str]) -> bool:
    return server().forkable(env)


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` in `cwd` with exactly the environment `env`: forked from the preloaded server where
    that starts the same, else in a fresh process."""
    if not forkable(env):
        return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=env, check=False)
    return server().run(args, cwd, env, timeout)


def close() -> None:
    global _server
    if _server is not None:
        _server.close()
        _server = None


def _command(request: dict) -> None:
    """In the forked process: become `python -m harness ARGS` as started in a fresh interpreter; never returns."""
    import runpy

    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = request["cwd"]
        with open(os.devnull) as nothing:
            os.dup2(nothing.fileno(), 0)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            with open(path, "w") as file:
                os.dup2(file.fileno(), fd)
        sys.argv = ["-m", *request["args"]]
        runpy.run_module("harness", run_name="__main__", alter_sys=True)  # ends with os._exit
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # noqa: BLE001 -- as an uncaught exception ends a fresh interpreter
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _answer(conn: socket.socket) -> None:
    """In the process forked for one request: fork the command, report its pid and then its exit code."""
    _die_with_parent()  # with the server
    request = json.loads(conn.makefile().readline())
    pid = os.fork()
    if pid == 0:
        _die_with_parent()  # with this process, which waits for it: so with the pytest process, as a whole tree
        conn.close()
        _command(request)
    conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
    _, status = os.waitpid(pid, 0)
    conn.sendall((json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n").encode())


def _die_with_parent() -> None:
    """SIGKILL once the parent dies (PR_SET_PDEATHSIG; a fork does not inherit it)."""
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)


def serve(name: str) -> None:
    _die_with_parent()  # with the pytest process
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            try:
                _answer(conn)
            finally:
                os._exit(0)
        conn.close()
        while True:  # reap the request processes that have answered
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


if __name__ == "__main__":
    serve(sys.argv[1])
