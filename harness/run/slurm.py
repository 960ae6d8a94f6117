"""A run under SLURM (hydra/launcher=slurm): what its run.json says when SLURM preempts, cancels or requeues it."""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager

from harness.store.run_files import RunRecord

PREEMPTED = ("SLURM sent SIGTERM (a preemption or a cancellation): the job is ending and awaits its requeue, "
             "whose attempt resumes from the last complete epoch")
REQUEUED = "SLURM's warning before the time limit: the job was requeued and resumes from its last complete epoch"
OUT_OF_REQUEUES = ("SLURM's time limit came after the last requeue hydra.launcher.max_num_timeout allows: the run "
                   "did not finish; its last complete epoch is kept, and the resume line the command prints at its "
                   "end trains it on (or raise hydra.launcher.max_num_timeout or hydra.launcher.timeout_min)")


def out_of_requeues(err: BaseException) -> bool:
    """submitit gave up on the run at a time limit (its requeues used up): the run did not finish, it did not fail.
    submitit raises its UncompletedJobError from the signal handler, inside the run."""
    if not os.environ.get("SLURM_JOB_ID"):
        return False
    from submitit.core.utils import UncompletedJobError

    return isinstance(err, UncompletedJobError) and "timed-out" in str(err)


@contextmanager
def preemption(record: RunRecord):
    """Under SLURM, SIGTERM is a preemption or a cancellation: submitit lets the process run on until SLURM kills
    it, so run.json says `interrupted` (with PREEMPTED) the moment the signal arrives, not `running` until a
    requeued attempt starts. Elsewhere SIGTERM is harness.launch.signals' to handle."""
    if not os.environ.get("SLURM_JOB_ID") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def preempted(signum, frame):
        record.update(status="interrupted", notes=[*record.data.get("notes", []), PREEMPTED])
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, preempted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
