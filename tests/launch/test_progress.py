"""The sweep's progress line on a terminal and in a log (harness.launch.progress)."""
import io

from harness.launch.progress import clock, terminal_progress


def test_clock_is_minutes_and_seconds():
    assert [clock(s) for s in (0, 9.4, 61.6, 3600)] == ["0:00", "0:09", "1:02", "60:00"]


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_in_a_log_a_line_is_written_only_when_the_counts_change():
    log = io.StringIO()
    show = terminal_progress(log)
    show("[harness] runs 0/2 done · 2 running · 0 failed · elapsed 0:00 · ETA ?", False)
    show("[harness] runs 0/2 done · 2 running · 0 failed · elapsed 0:01 · ETA 0:05", False)  # only time moved
    show("[harness] runs 1/2 done · 1 running · 0 failed · elapsed 0:03 · ETA 0:03", False)
    show("[harness] runs 2/2 done · 0 running · 0 failed · elapsed 0:06 · ETA 0:00", True)
    assert log.getvalue().splitlines() == [
        "[harness] runs 0/2 done · 2 running · 0 failed · elapsed 0:00 · ETA ?",
        "[harness] runs 1/2 done · 1 running · 0 failed · elapsed 0:03 · ETA 0:03",
        "[harness] runs 2/2 done · 0 running · 0 failed · elapsed 0:06 · ETA 0:00",
    ]


def test_on_a_terminal_one_line_is_rewritten_in_place_and_ended_at_the_end():
    terminal = Terminal()
    show = terminal_progress(terminal)
    show("runs 0/1 done · elapsed 0:00", False)
    show("runs 0/1 done · elapsed 0:01", False)
    show("runs 1/1 done · elapsed 0:02", True)
    assert terminal.getvalue() == ("\r\033[Kruns 0/1 done · elapsed 0:00" "\r\033[Kruns 0/1 done · elapsed 0:01"
                                   "\r\033[Kruns 1/1 done · elapsed 0:02\n")


def test_the_eta_weighs_each_epoch_left_by_its_own_settings_measured_rate():
    """Batch 8 measured at 6 s an epoch and batch 64 at 1 s: 10 epochs of each left, 2 at once, is (60 + 10) / 2 s,
    where weighing by planned epochs alone would give each epoch the same cost. A setting not measured yet takes
    the median of the others; nothing measured yet is no estimate."""
    from harness.launch.progress import cost_class, eta_seconds

    small, large = cost_class(["batch_size=8", "seed=0"]), cost_class(["seed=2", "batch_size=64"])
    assert small == cost_class(["seed=1", "batch_size=8"]) != large  # the seed costs nothing
    measured = {small: (12.0, 2), large: (3.0, 3)}
    assert eta_seconds(measured, [(small, 10), (large, 10)], slots=2) == 35.0
    assert eta_seconds(measured, [(small, 10)], slots=2) == 60.0  # one run left runs alone
    other = cost_class(["batch_size=32", "seed=0"])
    assert eta_seconds(measured, [(other, 4)], slots=1) == 4 * 6.0  # median of [1, 6]: the upper middle
    assert eta_seconds({}, [(small, 10)], slots=2) is None
    assert eta_seconds({}, [(small, 0)], slots=2) == 0.0  # nothing left


def _finished_run(folder, epoch_seconds, run_seconds):
    import pandas as pd

    folder.mkdir()
    pd.DataFrame({"epoch": range(1, len(epoch_seconds) + 1), "epoch_seconds": epoch_seconds}).to_parquet(
        folder / "metrics.parquet")
    return {"run_seconds": run_seconds, "epochs_completed": len(epoch_seconds)}


def test_the_eta_keeps_a_runs_first_epoch_compilation_out_of_its_seconds_per_epoch(tmp_path):
    """MobileNetV2's diagnosis, as measured: each run's first epoch is ~20 s of building and compiling, each later
    one 0.8 s. Two-epoch runs of batch 8 and 64 done, the 14-epoch steps arm (a class not seen yet) left: it took
    32 s. Whole runs' seconds per epoch (13.5) promised 14 x 13.5 = 189 s; the fixed seconds and the later epochs'
    rate give about 25 + 14 x 0.9."""
    from harness.launch.progress import Eta, cost_class

    small, large, steps = (cost_class([f"batch_size={b}", *extra]) for b, extra in
                           ((8, []), (64, []), (64, ["budget=steps"])))
    eta = Eta()
    eta.finished(0, small, tmp_path / "0", _finished_run(tmp_path / "0", [20.6, 1.0], 27.6))
    eta.finished(1, large, tmp_path / "1", _finished_run(tmp_path / "1", [21.0, 0.8], 26.6))
    predicted = eta.seconds([(steps, 14)], [], slots=2)
    assert 25 < predicted < 45, predicted  # (27.6 - 2) and (26.6 - 1.6): fixed 25.3; 14 x 0.9 = 12.6
    assert predicted == eta.seconds([(steps, 14)], [], slots=2)  # a finished run is measured once
    running = eta.seconds([], [(steps, 4, 30.0, 10)], slots=2)  # past its first epoch: only its epochs left
    assert running == 4 * 0.9


def test_until_a_run_with_two_epochs_ends_whole_runs_stand_in(tmp_path):
    from harness.launch.progress import Eta, cost_class

    small = cost_class(["batch_size=8"])
    eta = Eta()
    assert eta.seconds([(small, 3)], [], slots=1) is None  # nothing measured
    assert eta.seconds([(small, 3)], [(small, 2, 10.0, 1)], slots=1) == (3 + 2) * 10.0  # the running run, 10 s/epoch
    eta.finished(0, small, tmp_path / "0", _finished_run(tmp_path / "0", [9.0], 12.0))  # one epoch: no rate
    assert eta.seconds([(small, 3)], [], slots=1) == 3 * 12.0


def test_the_eta_counts_only_the_epochs_a_resumed_or_continued_run_has_left(tmp_path):
    """A job whose folder already holds 2 of its 5 epochs (a paused run's fork, an interrupted run) has 3 left; a
    fresh one its 5."""
    import json

    from harness.launch.progress import Eta

    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "run.json").write_text(json.dumps({"status": "interrupted", "epochs_completed": 2}))
    eta = Eta()
    assert [eta.left(n, ("batch_size=8",), tmp_path / str(n), 5) for n in (0, 1)] == [
        (("batch_size=8",), 5), (("batch_size=8",), 3)]
