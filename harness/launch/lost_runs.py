"""A run whose process died without writing its outcome (killed, crashed) still gets a final run.json, written by
the launcher (harness.launch.scheduler) on its behalf."""
from __future__ import annotations

import logging

from harness.store.files import write_json
from harness.store.layout import RUN_FILE
from harness.store.run_files import now_iso

log = logging.getLogger("harness.launch.scheduler")


def record_lost_run(job, record: dict | None, code: int, interrupted: bool) -> None:
    """The final run.json of the scheduler's `job` (harness.launch.scheduler.Job), whose process ended with `code`
    and left `record` (its run.json, or None) unfinished."""
    record = record or {"run_id": job.run_id, "config": _config(job), "overrides": job.overrides,
                        "started_at": None, "epochs_completed": 0, "environment": {}}
    record["status"] = "interrupted" if interrupted else "failed"
    record["finished_at"] = now_iso()
    if not interrupted:
        record["error"] = {"type": "ProcessExit", "message": f"the run's process exited with code {code} "
                           f"without recording an outcome (see {job.run_dir / 'train.log'})", "traceback": ""}
    try:
        write_json(job.run_dir / RUN_FILE, record)
    except OSError as err:  # a full disk or a read-only folder: say so in one line and go on with the sweep
        log.error("harness: could not record run %s as %s: %s: %s", job.run_id, record["status"],
                  err.strerror or type(err).__name__, err.filename or job.run_dir / RUN_FILE)


def _config(job) -> dict:
    """The job's flat config for a run.json written on its behalf (composed now: a lost run is rare)."""
    try:
        return job.config()
    except Exception as err:  # composing it failed here too: the record says which run it was, without its config
        log.error("harness: the config of run %s could not be recorded: %s: %s", job.run_id, type(err).__name__, err)
        return {}
