"""`python -m harness.worker SWEEP_DIR`: a warm run process, the server side of harness.launch.worker.

Why: starting Python and importing TensorFlow costs about 5 s of a 15 s MNIST-1D run on a 2-core CPU, and a
sweep of 12 runs paid it 12 times. The launcher starts one such process per slot, which pays it once. Each job
takes the path of `python -m harness OVERRIDES` from Hydra's run on (harness.launch.cli.run_planned_job: the run
folder is locked, Hydra composes its config and writes .hydra/, run.json and metrics.parquet are written the same
way), without planning it again as the command did before the first run started, with its stdout
and stderr on its own train.log, and starts from a cleared Keras session and its own seed, so its metrics are
bitwise those of a fresh process (tested). GPU jobs and simulated devices keep a fresh process each: TensorFlow's
device setup is fixed for the life of a process. So is Keras's backend: a worker runs the jobs of one backend
(KERAS_BACKEND in its environment).

Protocol: the scheduler (harness.launch.worker.Worker) writes one JSON line per job on the worker's stdin
({"args": [...], "log": "..."}; or {"probe": SWEEP_DIR, "log": "...", "options": [...]} for the sweep's
interpolation, `python -m harness.probe SWEEP_DIR OPTIONS` in the warm process, which saves its start-up); the
worker answers each with a JSON line on stdout: the job's exit code and whether it takes another job. An
interrupted job (exit code 128 + the signal) or one that ended abnormally (Hydra's sys.exit, an exception) ends the
worker with the same code, so no later job runs in a process whose state is in doubt.

Between jobs the worker collects its garbage once and freezes what survived (gc.freeze, as servers that fork do).
TensorFlow keeps about 700 graph operations of every run alive, and Keras's clear_session, at each run's start,
walks the whole heap (gc.collect): a run's set-up grew by about 3 ms a run in a warm worker (MNIST-1D, batch 128,
one epoch, measured: 0.05 s at its second run, 0.15 s at its thirtieth). Frozen, what earlier jobs left is never
walked again: the set-up stayed at 0.05 s. Reference counting still frees what a later job drops;
only a cycle among frozen objects is never freed, which the worker's retirement on memory bounds.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import traceback
from pathlib import Path
from typing import IO

INTERRUPTED = 128  # exit codes from 128 up: the job was stopped by a signal


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
            code = cli.run_planned_job(args)
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
        args = [job["probe"], *job.get("options", [])] if probe else job["args"]
        code, fit = _run_job(list(args), Path(job["log"]), probe)
        gc.collect()  # the job's own cycles, before what survived it is frozen
        gc.freeze()
        replies.write(json.dumps({"code": code, "reusable": fit}) + "\n")
        replies.flush()
        if not fit:
            return code
    return 0


def main() -> int:
    from harness.launch import signals
    from harness.launch.processes import die_with_parent

    die_with_parent()  # the command started it: it dies with the command
    signals.install()  # SIGTERM while waiting for a job ends the worker as Ctrl-C does
    replies = os.fdopen(os.dup(1), "w")  # fd 1 and 2 belong to each job's log in turn
    with open(os.devnull, "w") as nowhere:
        os.dup2(nowhere.fileno(), 1)
        os.dup2(nowhere.fileno(), 2)
    try:
        return serve(sys.stdin, replies)
    except KeyboardInterrupt as err:
        return signals.exit_code(err)[0]


if __name__ == "__main__":
    # leave without the interpreter's teardown of TensorFlow (about 1 s), as harness/__main__.py does
    code = main()
    sys.stderr.flush()
    os._exit(code)
