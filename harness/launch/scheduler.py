"""Run a sweep's jobs in processes of their own, several at once (the longest first), each on GPUs no other holds.

A GPU job gets a fresh process; CPU jobs that allow it (`Job.worker_args`) run one after another in warm worker
processes (harness.launch.worker), one per slot, which import TensorFlow once; a study's next round may take over
the warm workers of the round before (`warm`, `hand_over`). Plain Python (no Hydra, no TensorFlow): the launcher
plugin in hydra_plugins/ turns Hydra's job list into `Job`s and hands them here. The runs' own files are the record;
this module starts, watches and stops processes (a lost run's run.json: harness.launch.lost_runs).
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, TextIO

from harness.launch import signals
from harness.launch.lost_runs import record_lost_run
from harness.launch.processes import child_env, signal_group, wait_for_any
from harness.launch.progress import Eta, clock, cost_class
from harness.launch.resources import GpuPool, cpu_count, shared_gpu_env
from harness.launch.worker import Worker
from harness.run import stop
from harness.store import layout
from harness.store.run_files import inspect_run, is_finished

log = logging.getLogger(__name__)
# the numerical libraries' thread pools (OpenBLAS, MKL, OpenMP, Apple's Accelerate), as loky sizes its workers':
# OpenBLAS's second thread spins on a core the other run is using (measured: a run's end-of-run probes, whose
# Lanczos and L-BFGS-B steps are numpy and SciPy, 1.1 s alone, 1.8-2.0 s beside a busy core, 1.1 s with one thread)
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
REFUSED = 2  # a run's exit code when its command was refused before anything ran (harness.launch.cli.EXIT_INVALID)


@dataclass
class Job:
    num: int
    overrides: list[str]
    run_dir: Path
    command: list[str]
    gpus: int = 0                               # GPU slots the job needs (0: CPU)
    devices: tuple[int, ...] | None = None      # explicit GPU ids it must get
    epochs: int = 1
    config: Callable[[], dict] = dict           # its flat config, for a run.json written on the run's behalf
    worker_args: list[str] | None = None        # `python -m harness` arguments, if a warm CPU worker may run it
    backend: str = "tensorflow"                 # Keras's backend: fixed per process, so warm workers are per backend
    steps: int | None = None                    # optimizer steps it will take (None: not known before it runs)

    @property
    def run_id(self) -> str:
        return f"{self.run_dir.parent.name}/{self.run_dir.name}"


class SweepEnd(Protocol):
    """What follows the runs, in a warm worker where one is left (harness.launch.sweep_end.Interpolation)."""

    def start_early(self, worker: Worker, running: dict[Path, float]) -> bool:
        """Offered an idle warm worker while the last runs still run (folder: when its attempt started,
        time.time()): whether it started in it; the worker is then its own until `finish`."""

    def early_ended(self) -> bool:
        """Whether what it started early has ended (its worker may be offered again)."""

    def finish(self, worker: Worker | None) -> None:
        """After every run, with the worker it started in, else an idle warm worker or None."""


@dataclass
class _Running:
    job: Job
    process: subprocess.Popen
    gpu_ids: list[int]
    log: TextIO | None          # the process's train.log (a worker opens each job's itself)
    worker: Worker | None = None
    started: float = field(default_factory=time.time)

    def exit_code(self) -> int | None:
        return self.worker.result() if self.worker else self.process.poll()


class Scheduler:
    """Starts up to `n_jobs` processes at once and waits for all; returns each job's exit code."""

    def __init__(self, jobs: list[Job], n_jobs: int, gpu_ids: list[int], *, poll_seconds: float = 0.5,
                 stop_timeout: float = 60.0, progress: Callable[[str, bool], None] | None = None,
                 label: str = "", runs_per_gpu: int = 1, warm: list[Worker] | None = None,
                 hand_over: bool = False):
        self.jobs, self.n_jobs, self.pool = jobs, max(1, n_jobs), GpuPool(gpu_ids, runs_per_gpu)
        self.label = label  # what the progress line says these jobs are ("round 2 · ": a study's later round)
        self.poll_seconds, self.stop_timeout = poll_seconds, stop_timeout
        self.progress = progress or (lambda line, final: None)
        # every run its share of the cores, a GPU run's too (its input pipeline and its host ops)
        self.threads_per_job = max(1, cpu_count() // min(self.n_jobs, max(1, len(jobs))))
        self.exit_codes: dict[int, int] = {}
        self._eta, self.skipped = Eta(), []  # jobs left alone: finished before this command
        self.idle: list[Worker] = list(warm or [])  # warm workers waiting for their next job (the round before's)
        self.hand_over = hand_over  # keep the idle workers at the end, for the caller's next round (`idle`)
        self.keep = 0  # idle workers kept once no job needs them (one for the interpolation)
        self.then: SweepEnd | None = None
        self.then_backend = jobs[0].backend if jobs else None  # the sweep end's worker: of the sweep's backend
        self.early: Worker | None = None  # the worker `then` started in before the last runs ended

    def _env(self, job: Job, gpu_ids: list[int]) -> dict[str, str]:
        env = child_env({**os.environ, "PYTHONUNBUFFERED": "1", "KERAS_BACKEND": job.backend})
        for name in ("HARNESS_GPUS_ASSIGNED", *shared_gpu_env(2)):
            env.pop(name, None)  # what a GPU run is given below, never inherited
        env["HARNESS_THREADS"] = str(self.threads_per_job)
        for name in BLAS_THREADS:  # the same share, unless the user set their own
            env.setdefault(name, str(self.threads_per_job))
        if gpu_ids:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpu_ids))
            env["HARNESS_GPUS_ASSIGNED"] = "1"  # `devices` ids are already applied by CUDA_VISIBLE_DEVICES
            env.update(shared_gpu_env(self.pool.runs_per_gpu))  # each run's share of a shared GPU's memory
        elif job.gpus == 0 and self.pool.all:
            env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU job keeps off the GPUs
        return env

    def _start(self, job: Job, gpu_ids: list[int]) -> _Running:
        job.run_dir.mkdir(parents=True, exist_ok=True)
        if job.worker_args is not None and not gpu_ids:
            worker = self._idle_worker(job.backend, self._env(job, gpu_ids)["HARNESS_THREADS"])
            if worker is None:  # a new one, in place of an idle one no job here can use (the round before's share)
                for old in [w for w in self.idle if w.threads != str(self.threads_per_job)][:1]:
                    self.idle.remove(old)
                    old.close()
                worker = Worker(job.run_dir.parent, self._env(job, gpu_ids), backend=job.backend)
            worker.send(job.worker_args, job.run_dir / layout.TRAIN_LOG)
            return _Running(job, worker.process, gpu_ids, None, worker)
        log = open(job.run_dir / layout.TRAIN_LOG, "a")
        process = subprocess.Popen(
            job.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self._env(job, gpu_ids),
            start_new_session=True)
        return _Running(job, process, gpu_ids, log)

    def _finish(self, running: _Running, code: int, interrupted: bool = False) -> None:
        if running.log is not None:
            running.log.close()
        if running.worker is not None:
            if running.worker.available and not interrupted:
                self.idle.append(running.worker)
            else:
                running.worker.close()
        self.pool.release(running.gpu_ids)
        self.exit_codes[running.job.num] = code
        if code == REFUSED:  # refused before it ran (its folder is another command's): the files are not its own
            log.error("run %s was refused before it started (see %s)", running.job.run_id,
                      running.job.run_dir / layout.TRAIN_LOG)
            return
        record, _ = inspect_run(running.job.run_dir)
        if record is None or record.get("status") == "running":
            record_lost_run(running.job, record, code, interrupted)

    def run(self, then: SweepEnd | None = None) -> dict[int, int]:
        """Run the jobs; then `then` (the sweep's interpolation), offered a warm worker kept from the runs as soon
        as no job is left to start, and finished once every run has ended."""
        pending = []
        for job in self.jobs:  # finished runs with intact files are left alone; damaged ones run again
            (self.skipped if is_finished(job.run_dir) else pending).append(job)
        if self.n_jobs > 1:  # the longest first, so the last to end are short (LPT); one slot: the plan's order
            pending.sort(key=lambda job: -(job.steps or 0))
        running, started = [], time.monotonic()  # the runs under way (_Running)
        self.then, self.keep = then, self.n_jobs if self.hand_over else (1 if then is not None else 0)
        handed = False
        try:
            self._loop(pending, running, started)
            if then is not None:
                self._then(then)
            handed = self.hand_over
        finally:
            if self.early is not None:
                self.early.close()
            self._close_idle(keep=len(self.idle) if handed else 0)
        return self.exit_codes

    def _offer_early(self, running: list[_Running]) -> None:
        """While the last runs run, offer `then` an idle warm worker of the sweep's backend, again whenever what
        it started there has ended."""
        if self.early is not None:
            if not self.then.early_ended():
                return
            worker, self.early = self.early, None
            if worker.available:
                self.idle.append(worker)
            else:
                worker.close()
        worker = self._idle_worker(self.then_backend)
        if worker is None:
            return
        if self.then.start_early(worker, {r.job.run_dir: r.started for r in running}):
            self.early = worker
        else:
            self.idle.append(worker)

    def _then(self, then: SweepEnd) -> None:
        worker, self.early = self.early or self._idle_worker(self.then_backend), None
        try:
            then.finish(worker)
        except BaseException:  # Ctrl-C during it: the worker (a session of its own) is stopped as a run would be
            if worker is not None:
                signal_group(worker.process, signal.SIGINT)
            raise
        finally:
            if worker is not None:
                worker.close()

    def _loop(self, pending: list[Job], running: list[_Running], started: float) -> None:
        try:
            while pending or running:
                stop.check()  # a signal whose exception was lost on its way (one raised in a __del__ is only printed)
                for job in list(pending):
                    if len(running) >= self.n_jobs:
                        break
                    gpu_ids = self.pool.acquire(job)
                    if gpu_ids is not None:
                        pending.remove(job)
                        try:
                            with signals.deferred():  # a signal as it starts: the run is stopped with the others
                                running.append(self._start(job, gpu_ids))
                        except OSError as err:  # its folder cannot be written (full disk, read-only)
                            self.pool.release(gpu_ids)
                            self.exit_codes[job.num] = 1
                            log.error("harness: could not start run %s: %s: %s", job.run_id, err.strerror, err.filename)
                ended = False
                for r in list(running):
                    code = r.exit_code()
                    if code is not None:
                        running.remove(r)
                        self._finish(r, code)
                        ended = True
                if not any(job.worker_args is not None for job in pending):
                    self._close_idle(keep=self.keep)
                if self.then is not None and running and not pending:
                    self._offer_early(running)
                self.progress(self._status_line(pending, running, started), False)
                # a freed slot takes the next job at once; else wait for a run's end (a reply, an exit), or a poll
                if (pending or running) and not (ended and pending):
                    workers = [r.worker for r in running] + [self.early]  # a run's reply, or the early round's
                    wait_for_any([r.process for r in running if r.worker is None],
                                 [w.process.stdout for w in workers if w is not None], self.poll_seconds)
        except KeyboardInterrupt:
            if self.early is not None:  # the sweep end it started: stopped with the runs
                signal_group(self.early.process, signal.SIGINT)
            self._stop(running)
            self.progress(self._status_line(pending, [], started) + " · interrupted", True)
            raise
        self.progress(self._status_line(pending, running, started), True)

    def _idle_worker(self, backend: str | None, threads: str | None = None) -> Worker | None:
        """A warm worker of `backend` (any backend for None) and, given, of that share of the cores, or None;
        workers found dead are closed."""
        for worker in [w for w in self.idle if not w.available]:
            self.idle.remove(worker)
            worker.close()  # it died while it waited
        for worker in reversed(self.idle):
            if (backend is None or worker.backend == backend) and (threads is None or worker.threads == threads):
                self.idle.remove(worker)
                return worker
        return None

    def _close_idle(self, keep: int = 0) -> None:
        """Close the idle workers but the `keep` that became idle last (the round's own, not the round before's)."""
        while len(self.idle) > keep:
            self.idle.pop(0).close()

    def _stop(self, running: list[_Running]) -> None:
        """Ctrl-C: SIGINT to every child (they record `interrupted`), then SIGKILL any that linger."""
        for r in running:
            signal_group(r.process, signal.SIGINT)
        deadline = time.monotonic() + self.stop_timeout
        for r in running:
            try:
                code = r.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(r.process, signal.SIGKILL)
                code = r.process.wait()
            self._finish(r, code, interrupted=True)

    def _status_line(self, pending: list[Job], running: list[_Running], started: float) -> str:
        done = [j for j in self.jobs if j.num in self.exit_codes]
        records = {j.num: inspect_run(j.run_dir)[0] or {} for j in done}
        failed = sum(1 for j in done if records[j.num].get("status") == "failed")
        for job in done:
            self._eta.finished(job.num, cost_class(job.overrides), job.run_dir, records[job.num])
        running_left = []  # (class, epochs left, seconds so far, epochs trained in this command)
        for r in running:
            record = inspect_run(r.job.run_dir)[0] or {}
            reached = int(record.get("epochs_completed") or 0)
            running_left.append((cost_class(r.job.overrides), max(0, r.job.epochs - reached), time.time() - r.started,
                                 reached - int(record.get("resumed_from_epoch") or 0)))
        elapsed = time.monotonic() - started
        left = [self._eta.left(j.num, cost_class(j.overrides), j.run_dir, j.epochs) for j in pending]
        seconds = self._eta.seconds(left, running_left, self.n_jobs)
        eta = "?" if seconds is None else clock(max(0.0, seconds))
        skipped = f" · {len(self.skipped)} already done" if self.skipped else ""
        return (f"[harness] {self.label}runs {len(done) + len(self.skipped)}/{len(self.jobs)} done · {len(running)} "
                f"running · {failed} failed{skipped} · elapsed {clock(elapsed)} · ETA {eta}")
