"""Warm run processes, the scheduler's side: one `python -m harness.worker SWEEP_DIR` (harness/worker.py, the
process that serves) per launcher slot runs a sweep's CPU jobs one after another, so TensorFlow is imported once
per slot rather than once per run. This module starts such a process, hands it one job at a time (a JSON line on
its stdin) and reads each job's exit code back (a JSON line on its stdout).
"""
from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

import psutil

# A process's resident memory grows with each run (TensorFlow keeps every run's graphs: MNIST-1D's main job,
# measured, 800 MB at its first run, 870 MB at its sixth before the worker froze what each job left; about 3 MB a
# run since). A worker retires once it has grown by MAX_GROWTH bytes since its first job ended, or after
# MAX_RUNS jobs; the next job starts a fresh one, which pays the import again (about 2 s of TensorFlow on a
# 2-core CPU). Growth, not the size itself, is what a leak shows: a large model's first run may hold gigabytes.
MAX_GROWTH = 512 * 2**20
MAX_RUNS = 100


class Worker:
    """The scheduler's side: one warm process, one job at a time."""

    def __init__(self, sweep_dir: Path, env: dict[str, str], backend: str = "tensorflow"):
        # the sweep folder on the command line names the process in `ps` (and to the tests that look for orphans)
        self.backend = backend  # Keras's backend, fixed for the life of the process: it runs only that backend's jobs
        self.threads = env.get("HARNESS_THREADS")  # its share of the cores, fixed too: another share's job starts anew
        self.reusable = True  # false once a job has retired the worker
        self.runs = 0
        self.first_held: float | None = None  # its resident memory once its first job ended
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.worker", str(sweep_dir)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, start_new_session=True)

    def send(self, args: list[str], log_path: Path) -> None:
        self._request({"args": args, "log": str(log_path)})
        self.runs += 1

    def interpolate(self, sweep_dir: Path, log_path: Path, meanwhile: Callable[[], None] | None = None,
                    options: Sequence[str] = ()) -> int:
        """The sweep's interpolation in this warm process; its exit code once done (the worker's own if it died).
        `meanwhile` runs in the calling process while the worker computes."""
        self.start_interpolation(sweep_dir, log_path, options)
        return self.wait(meanwhile)

    def start_interpolation(self, sweep_dir: Path, log_path: Path, options: Sequence[str] = ()) -> None:
        """Start the sweep's interpolation (`python -m harness.probe SWEEP_DIR OPTIONS`, e.g. --include-running,
        --waiting RUN, --only-new) and return at once; `wait` for its exit code."""
        self._request({"probe": str(sweep_dir), "log": str(log_path), "options": list(options)})

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
                if self.first_held is None:
                    self.first_held = self.resident()
                return int(reply["code"])
            self.reusable = False
            return self.process.wait()  # end of file: the worker died without answering
        return self.process.poll()

    @property
    def available(self) -> bool:
        """Whether it can take another job: alive, not retired by its last job, under MAX_RUNS, and grown by at most
        MAX_GROWTH since its first job."""
        grown = self.resident() - (self.first_held or 0.0) if self.runs else 0.0
        return self.reusable and self.runs < MAX_RUNS and self.process.poll() is None and grown <= MAX_GROWTH

    def resident(self) -> float:
        """The process's resident memory in bytes (inf where it cannot be read: the worker retires)."""
        try:
            return float(psutil.Process(self.process.pid).memory_info().rss)
        except psutil.Error:
            return float("inf")

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
