"""The sweep's interpolation as the scheduler's last step (harness.launch.sweep_end.Interpolation), on constructed
sweeps and a stand-in worker (no TensorFlow): when it may start before the last runs end, and that its result is
redone when those runs end otherwise than it assumed."""
import json
import os
import time

import pandas as pd

from harness.launch.sweep_end import WARM, Interpolation
from harness.probes import interpolation
from harness.store import layout
from tests.helpers.sweeps import make_run


class _Worker:
    """A warm worker that "interpolates" by writing the pairs it was asked for into interpolation.parquet."""

    def __init__(self, sweep):
        self.sweep, self.requests, self.available = sweep, [], True
        self.process = type("Process", (), {"pid": 4242})()

    def start_interpolation(self, sweep_dir, log_path, include_running=False):
        header = log_path.read_text() if log_path.exists() else ""
        self.requests.append(("early" if include_running else "at the end", header))
        found = interpolation.pairs(sweep_dir, include_running)
        pd.DataFrame({"small_run": [p.small["run_id"] for p in found], "large_run": [p.large["run_id"] for p in found],
                      "alpha": 0.0}).to_parquet(sweep_dir / layout.INTERPOLATION_FILE, index=False)

    def wait(self, meanwhile=None):
        return 0

    def interpolate(self, sweep_dir, log_path, meanwhile=None):
        self.start_interpolation(sweep_dir, log_path)
        return self.wait()


def _sweep(tmp_path, last_status="running"):
    """Batch 8 completed with its final weights; batch 64 still `running` (in its end-of-run probes)."""
    sweep = tmp_path / "sweep"
    for job, batch, status in ((0, 8, "completed"), (1, 64, last_status)):
        make_run(sweep, job, batch_size=batch, seed=0, status=status, finished=status != "running")
    (sweep / "0" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    return sweep


def _status(run_dir, status):
    record = json.loads((run_dir / layout.RUN_FILE).read_text())
    (run_dir / layout.RUN_FILE).write_text(json.dumps({**record, "status": status}))


def test_it_starts_early_only_once_every_running_run_has_written_its_final_weights_in_this_attempt(tmp_path):
    sweep = _sweep(tmp_path)
    last, worker, end = sweep / "1", _Worker(sweep), Interpolation(sweep)
    started = time.time()
    assert not end.start_early(worker, {last: started})  # still training: no final weights yet
    (last / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    os.utime(last / layout.FINAL_WEIGHTS, (started - 60, started - 60))
    assert not end.start_early(worker, {last: started})  # an earlier attempt's weights
    assert worker.requests == [] and end.early is None
    (last / layout.FINAL_WEIGHTS).write_bytes(b"weights")  # written again by this attempt
    assert end.start_early(worker, {last: started}) and end.early is worker
    assert worker.requests == [("early", f"{WARM} (pid 4242), started while run 1 wrote its end-of-run probes\n")]
    assert not end.start_early(worker, {last: started})  # decided once
    _status(last, "completed")
    end.finish(worker)
    assert len(worker.requests) == 1  # the early result stands: the same pairs, newer than their weights
    assert not interpolation.needs_update(sweep)


def test_a_run_that_fails_after_its_weights_are_written_has_the_interpolation_done_again(tmp_path):
    """The early interpolation paired batch 8 with the still-running batch 64; batch 64 then failed (killed in its
    probes): the pairs it computed are not the sweep's, so finish computes them again, without that run."""
    sweep = _sweep(tmp_path)
    make_run(sweep, 2, batch_size=32, seed=0)
    (sweep / "2" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    last, worker, end = sweep / "1", _Worker(sweep), Interpolation(sweep)
    started = time.time() - 1
    (last / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    assert end.start_early(worker, {last: started})
    assert pd.read_parquet(sweep / layout.INTERPOLATION_FILE)["large_run"].tolist() == ["sweep/1"]
    _status(last, "failed")
    assert interpolation.needs_update(sweep)
    end.finish(worker)
    assert [kind for kind, _ in worker.requests] == ["early", "at the end"]
    assert pd.read_parquet(sweep / layout.INTERPOLATION_FILE)["large_run"].tolist() == ["sweep/2"]
    assert not interpolation.needs_update(sweep)


def test_without_pairs_nothing_starts_early(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8, seed=0, status="running", finished=False)  # one batch size: nothing to pair
    (sweep / "0" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    worker = _Worker(sweep)
    assert not Interpolation(sweep).start_early(worker, {sweep / "0": time.time() - 1})
    assert worker.requests == [] and not (sweep / layout.INTERPOLATION_LOG).exists()


def test_the_interpolation_is_stale_when_its_pairs_are_not_the_sweeps(tmp_path):
    """needs_update: a parquet of other runs (one failed, or ran again with new weights since) is redone."""
    sweep = _sweep(tmp_path, last_status="completed")
    (sweep / "1" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    worker = _Worker(sweep)
    assert interpolation.needs_update(sweep)
    worker.interpolate(sweep, tmp_path / "log")
    assert not interpolation.needs_update(sweep)
    later = time.time() + 5
    os.utime(sweep / "1" / layout.FINAL_WEIGHTS, (later, later))
    assert interpolation.needs_update(sweep)  # its weights are newer
    worker.interpolate(sweep, tmp_path / "log")
    _status(sweep / "1", "failed")
    assert not interpolation.pairs(sweep) and not interpolation.needs_update(sweep)  # no pair left
    make_run(sweep, 2, batch_size=32, seed=0)
    (sweep / "2" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    os.utime(sweep / "2" / layout.FINAL_WEIGHTS, (later - 60, later - 60))  # older than the parquet
    assert interpolation.needs_update(sweep)  # but the parquet pairs 0 with the failed run 1, not with 2
