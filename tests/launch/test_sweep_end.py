"""The sweep's interpolation as the scheduler's last step (harness.launch.sweep_end.Interpolation), on constructed
sweeps and a stand-in worker (no TensorFlow): which pairs it computes before the last runs end, that each round
keeps the curves computed before, and that its result is redone when those runs end otherwise than it assumed."""
import json
import os

import pandas as pd
import pytest

from harness.launch.sweep_end import WARM, Interpolation
from harness.probes import interpolation
from harness.run import interpolation as run_interpolation
from harness.store import layout
from tests.helpers.sweeps import make_run

# when "this attempt" of a running run started (time.time()): long before any file a test writes, and set back
# explicitly (os.utime) for weights of an earlier attempt, so that no test reads the clock
STARTED = 1_000_000_000.0


@pytest.fixture(autouse=True)
def _curves_without_tensorflow(monkeypatch):
    """harness.run.interpolation's own pairing, reuse and file, with a made-up curve per pair computed (its first
    α's train_loss counts the curves computed so far), and no backend loaded."""
    computed = []

    def curve(sweep_dir, pair, alphas=interpolation.ALPHAS, built=None):
        computed.append(interpolation.key(pair))
        frame = pd.DataFrame({"alpha": [0.0, 1.0], "train_loss": [float(len(computed)), 0.0], "train_acc": 0.5,
                              "val_loss": 1.0, "val_acc": 0.5})
        return run_interpolation._labelled(frame, pair)

    monkeypatch.setattr(run_interpolation, "interpolate", curve)
    monkeypatch.setattr("harness.backend.select", lambda *args, **kwargs: None)
    return computed


class _Worker:
    """A warm worker whose interpolation is `python -m harness.probe`'s main in this process, with its options;
    `busy` leaves a round under way (no result yet); `code`, the exit code it answers."""

    def __init__(self, sweep):
        self.sweep, self.requests, self.available, self.busy, self.code = sweep, [], True, False, 0
        self.process = type("Process", (), {"pid": 4242})()

    def start_interpolation(self, sweep_dir, log_path, options=()):
        header = log_path.read_text() if log_path.exists() else ""
        self.requests.append(("early" if "--include-running" in options else "at the end", header))
        assert run_interpolation.main([str(sweep_dir), *options]) == 0

    def result(self):
        return None if self.busy else self.code

    def wait(self, meanwhile=None):
        return 0

    def interpolate(self, sweep_dir, log_path, meanwhile=None, options=()):
        self.start_interpolation(sweep_dir, log_path, options)
        return self.wait()


def _pairs_in_file(sweep):
    frame = pd.read_parquet(sweep / layout.INTERPOLATION_FILE)
    return sorted(set(zip(frame["small_run"], frame["large_run"])))


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


def test_each_round_computes_the_pairs_no_training_run_can_change_and_keeps_the_curves_computed_before(
        tmp_path, _curves_without_tensorflow):
    """Seed 0's runs have ended, seed 1's batch 64 still trains: a round starts with seed 0's pair (seed 1's may
    change when its last run ends); one round at a time; once run 3 has written its final weights in this attempt
    (in its end-of-run probes) a second round adds seed 1's pair and keeps seed 0's curve; at the end nothing is
    left to do."""
    computed, sweep = _curves_without_tensorflow, tmp_path / "sweep"
    for job, batch, seed, status in ((0, 8, 0, "completed"), (1, 64, 0, "completed"), (2, 8, 1, "completed"),
                                     (3, 64, 1, "running")):
        make_run(sweep, job, batch_size=batch, seed=seed, status=status, finished=status != "running")
        if status == "completed":
            (sweep / str(job) / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    last, worker, end = sweep / "3", _Worker(sweep), Interpolation(sweep)
    started = STARTED
    assert not end.start_early(worker, {last: started, sweep / "4": started})  # run 4 has no run.json yet
    assert end.start_early(worker, {last: started}) and end.early is worker
    assert worker.requests == [("early", f"{WARM} (pid 4242), started while run 3 ran\n")]
    assert _pairs_in_file(sweep) == computed == [("sweep/0", "sweep/1")]
    worker.busy = True
    assert not end.early_ended() and not end.start_early(worker, {last: started})  # one round at a time
    worker.busy = False
    assert end.early_ended() and end.early is None
    assert not end.start_early(worker, {last: started})  # nothing new while run 3 trains
    (last / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    os.utime(last / layout.FINAL_WEIGHTS, (started - 60, started - 60))
    assert not end.start_early(worker, {last: started})  # an earlier attempt's weights: it still trains
    (last / layout.FINAL_WEIGHTS).write_bytes(b"weights")  # written again by this attempt
    assert end.start_early(worker, {last: started})
    assert _pairs_in_file(sweep) == [("sweep/0", "sweep/1"), ("sweep/2", "sweep/3")]
    assert computed == [("sweep/0", "sweep/1"), ("sweep/2", "sweep/3")]  # seed 0's kept, not computed again
    frame = pd.read_parquet(sweep / layout.INTERPOLATION_FILE)
    assert frame.groupby("pair")["train_loss"].first().to_dict() == {"seed=0": 1.0, "seed=1": 2.0}
    assert (sweep / layout.INTERPOLATION_LOG).read_text().count(WARM) == 2  # both rounds' output kept
    assert end.early_ended()
    _status(last, "completed")
    end.finish(worker)
    assert len(worker.requests) == 2 and len(computed) == 2  # the result stands
    assert not interpolation.needs_update(sweep)


def test_a_run_that_fails_after_its_weights_are_written_has_the_interpolation_done_again(tmp_path):
    """The early interpolation paired batch 8 with the still-running batch 64; batch 64 then failed (killed in its
    probes): the pairs it computed are not the sweep's, so finish computes them again, without that run."""
    sweep = _sweep(tmp_path)
    make_run(sweep, 2, batch_size=32, seed=0)
    (sweep / "2" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    last, worker, end = sweep / "1", _Worker(sweep), Interpolation(sweep)
    started = STARTED
    (last / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    assert end.start_early(worker, {last: started})
    assert _pairs_in_file(sweep) == [("sweep/0", "sweep/1")]
    _status(last, "failed")
    assert interpolation.needs_update(sweep)
    end.finish(worker)
    assert [kind for kind, _ in worker.requests] == ["early", "at the end"]
    assert _pairs_in_file(sweep) == [("sweep/0", "sweep/2")]
    assert not interpolation.needs_update(sweep)


def test_the_sweep_is_read_again_only_when_a_run_has_changed(tmp_path, monkeypatch):
    """The scheduler offers at every wake-up; the sweep's run.json files are read only when a run has ended,
    written its final weights or its run.json since the last look."""
    sweep = _sweep(tmp_path)
    looks = []
    real = interpolation.needs_update
    monkeypatch.setattr(interpolation, "needs_update", lambda *a, **k: looks.append(k["waiting"]) or real(*a, **k))
    worker, end, started = _Worker(sweep), Interpolation(sweep), STARTED
    just_started = sweep / "2"  # no run.json yet: its group is unknown
    for _ in range(3):
        assert not end.start_early(worker, {sweep / "1": started, just_started: started})
    assert looks == [["1", "2"]]
    make_run(sweep, 2, batch_size=32, seed=1, status="running", finished=False)
    assert not end.start_early(worker, {sweep / "1": started, just_started: started})
    assert looks == [["1", "2"]] * 2  # its run.json appeared: read again (seed 0's run 1 still trains)
    (sweep / "1" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    assert end.start_early(worker, {sweep / "1": started, just_started: started}) and looks[-1] == ["2"]


def test_after_a_round_fails_no_other_starts_before_the_end(tmp_path):
    """A round that exits non-zero (a model the process cannot rebuild, say) is not started again and again beside
    the last run: the end tries once more, and says why if it fails again."""
    sweep = _sweep(tmp_path)
    make_run(sweep, 2, batch_size=32, seed=1)
    make_run(sweep, 3, batch_size=64, seed=1, status="running", finished=False)
    (sweep / "2" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    worker, end, started = _Worker(sweep), Interpolation(sweep), STARTED
    (sweep / "1" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    worker.code = 1
    assert end.start_early(worker, {sweep / "1": started, sweep / "3": started})
    assert end.early_ended() and end.failed
    (sweep / "3" / layout.FINAL_WEIGHTS).write_bytes(b"weights")  # seed 1's pair is ready now
    assert not end.start_early(worker, {sweep / "3": started}) and len(worker.requests) == 1


def test_without_pairs_nothing_starts_early(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=8, seed=0, status="running", finished=False)  # one batch size: nothing to pair
    (sweep / "0" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    worker = _Worker(sweep)
    assert not Interpolation(sweep).start_early(worker, {sweep / "0": STARTED})
    assert worker.requests == [] and not (sweep / layout.INTERPOLATION_LOG).exists()


def test_the_interpolation_is_stale_when_its_pairs_are_not_the_sweeps(tmp_path):
    """needs_update: a parquet of other runs (one failed, or ran again with new weights since) is redone."""
    sweep = _sweep(tmp_path, last_status="completed")
    (sweep / "1" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    worker = _Worker(sweep)
    assert interpolation.needs_update(sweep)
    worker.interpolate(sweep, tmp_path / "log")
    assert not interpolation.needs_update(sweep)
    later = (sweep / layout.INTERPOLATION_FILE).stat().st_mtime + 5  # newer than the parquet
    os.utime(sweep / "1" / layout.FINAL_WEIGHTS, (later, later))
    assert interpolation.needs_update(sweep)  # its weights are newer
    worker.interpolate(sweep, tmp_path / "log")
    _status(sweep / "1", "failed")
    assert not interpolation.pairs(sweep) and not interpolation.needs_update(sweep)  # no pair left
    make_run(sweep, 2, batch_size=32, seed=0)
    (sweep / "2" / layout.FINAL_WEIGHTS).write_bytes(b"weights")
    os.utime(sweep / "2" / layout.FINAL_WEIGHTS, (later - 60, later - 60))  # older than the parquet
    assert interpolation.needs_update(sweep)  # but the parquet pairs 0 with the failed run 1, not with 2
