"""Warm run processes: `python -m harness.worker SWEEP_DIR` runs a sweep's CPU jobs one after another.

Why: starting Python and importing TensorFlow costs about 5 s of a 15 s MNIST-1D run on a 2-core CPU, and a
sweep of 12 runs paid it 12 times. A worker pays it once per launcher slot. Each job still takes the path of
`python -m harness OVERRIDES` (harness.launch.cli.main: Hydra composes its config and writes .hydra/, the run folder is
locked, run.json and metrics.parquet are written the same way), with its stdout and stderr on its own train.log,
and starts from a cleared Keras session and its own seed, so its metrics are bitwise those of a fresh process
(tested). GPU jobs and simulated devices keep a fresh process each: TensorFlow's device setup is fixed for the
life of a process. So is Keras's backend: a worker runs the jobs of one backend (KERAS_BACKEND in its environment).

Protocol: the scheduler writes one JSON line per job on the worker's stdin ({"args": [...], "log": "..."}; or
{"probe": SWEEP_DIR, "log": "...", "include_running": false} for the sweep's interpolation, `python -m harness.probe
SWEEP_DIR [--include-running]` in the warm process, which saves its start-up); the worker answers each with a JSON
line on stdout: the job's exit code and whether it takes another job. An interrupted job (exit code 128 + the
signal) or one that ended abnormally (Hydra's sys.exit, an exception) ends the worker with the same code, so no
later job runs in a process whose state is in doubt.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import IO, Callable

INTERRUPTED = 128  # exit codes from 128 up: the job was stopped by a signal
# A process's resident memory grows by about 10 MB a run (MNIST-1D main job, measured: 800 MB at its first run,
# 870 MB at its sixth), so a worker retires after this many and the next job starts a fresh one.
MAX_RUNS = 10


def _run_job(args: list[str], log_path: Path, probe: bool = False) -> tuple[int, bool]:
    """(exit code, whether the process is still fit for another job); stdout and stderr go to the job's log.
    `probe`: args is [SWEEP_DIR] for harness.run.interpolation instead of a run's overrides."""
    from harness.launch import cli, signals

    sys.stdout.flush()
    sys.stderr.flush()
    with open(log_path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        if probe:
            from harness.run import interpolation

            code = interpolation.main(args)
        else:
            code = cli.main(args)
        return code, code < INTERRUPTED
    except SystemExit as exit_:  # Hydra ends a job it cannot run with sys.exit
        code = exit_.code if isinstance(exit_.code, int) else 1
        return code, False
    except KeyboardInterrupt as err:  # a signal before the job's own handlers took over
        return signals.exit_code(err)[0], False
    except BaseException:  # a bug: recorded in the job's log, as a crashed process's traceback would be
        traceback.print_exc()
        return 1, False
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        with open(os.devnull, "w") as nowhere:
            os.dup2(nowhere.fileno(), 1)
            os.dup2(nowhere.fileno(), 2)


def serve(requests: IO[str], replies: IO[str]) -> int:
    """Run each requested job in turn; the exit code is the last job's when it retired the worker, else 0."""
    for line in requests:
        job = json.loads(line)
        probe = "probe" in job
        args = [job["probe"], *(["--include-running"] if job.get("include_running") else [])] if probe else job["args"]
        code, fit = _run_job(list(args), Path(job["log"]), probe)
        replies.write(json.dumps({"code": code, "reusable": fit}) + "\n")
        replies.flush()
        if not fit:
            return code
    return 0


def main() -> int:
    from harness.launch import signals

    signals.install()  # SIGTERM while waiting for a job ends the worker as Ctrl-C does
    replies = os.fdopen(os.dup(1), "w")  # fd 1 and 2 belong to each job's log in turn
    with open(os.devnull, "w") as nowhere:
        os.dup2(nowhere.fileno(), 1)
        os.dup2(nowhere.fileno(), 2)
    try:
        return serve(sys.stdin, replies)
    except KeyboardInterrupt as err:
        return signals.exit_code(err)[0]


class Worker:
    """The scheduler's side: one warm process, one job at a time."""

    def __init__(self, sweep_dir: Path, env: dict[str, str], preexec_fn=None, backend: str = "tensorflow"):
        # the sweep folder on the command line names the process in `ps` (and to the tests that look for orphans)
        self.backend = backend  # Keras's backend, fixed for the life of the process: it runs only that backend's jobs
        self.reusable = True  # false once a job has retired the worker
        self.runs = 0
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.worker", str(sweep_dir)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, start_new_session=True,
            preexec_fn=preexec_fn,
        )

    def send(self, args: list[str], log_path: Path) -> None:
        self._request({"args": args, "log": str(log_path)})
        self.runs += 1

    def interpolate(self, sweep_dir: Path, log_path: Path, meanwhile: Callable[[], None] | None = None) -> int:
        """The sweep's interpolation in this warm process; its exit code once done (the worker's own if it died).
        `meanwhile` runs in the calling process while the worker computes."""
        self.start_interpolation(sweep_dir, log_path)
        return self.wait(meanwhile)

    def start_interpolation(self, sweep_dir: Path, log_path: Path, include_running: bool = False) -> None:
        """Start the sweep's interpolation (`include_running`: of the runs still in their end-of-run probes too,
        harness.probes.interpolation.pairs) and return at once; `wait` for its exit code."""
        self._request({"probe": str(sweep_dir), "log": str(log_path), "include_running": include_running})

    def wait(self, meanwhile: Callable[[], None] | None = None) -> int:
        """The running job's exit code once it has ended; `meanwhile` runs in the calling process first."""
        if meanwhile is not None:
            meanwhile()
        while (code := self.result()) is None:
            select.select([self.process.stdout], [], [], 1.0)
        return code

    def _request(self, request: dict) -> None:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()

    def result(self) -> int | None:
        """The running job's exit code once it has ended (the worker's own, if it died during the job)."""
        readable, _, _ = select.select([self.process.stdout], [], [], 0)
        if readable:
            line = self.process.stdout.readline()
            if line.strip():
                reply = json.loads(line)
                self.reusable = bool(reply["reusable"])
                return int(reply["code"])
            self.reusable = False
            return self.process.wait()  # end of file: the worker died without answering
        return self.process.poll()

    @property
    def available(self) -> bool:
        """Whether it can take another job: alive, not retired by its last job, under MAX_RUNS."""
        return self.reusable and self.runs < MAX_RUNS and self.process.poll() is None

    def close(self) -> None:
        """No more jobs: the worker exits when it reads the end of its input."""
        try:
            self.process.stdin.close()
        except OSError:  # it has already exited
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


def run_as_command() -> None:
    """`python -m harness.worker`: serve, then leave without the interpreter's teardown of TensorFlow (about 1 s),
    as harness/__main__.py does."""
    code = main()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run_as_command()


def die_with_parent():
    """A child's preexec_fn that has it killed when the launcher dies, even by kill -9 (Linux; None elsewhere)."""
    return _die_with_parent if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    """In the child, before exec."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def signal_group(process: subprocess.Popen, sig: int) -> None:
    """`sig` to the process's whole group (its session: the run and any child of it)."""
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
