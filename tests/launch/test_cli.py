"""The command line (harness.launch.cli): expanding and checking a command's jobs, the output-folder lock, argument
parsing, and end to end, real `python -m harness` processes writing into tmp_path (slow)."""
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from harness.config import compose
from harness.config.schema import ConfigError
from harness.launch import cli
from harness.launch.cli import main, plan_command
from harness.report import html as report
from harness.store.layout import LOCK_FILE
from tests.conftest import TINY, run_harness

TIMING = ["epoch_seconds", "samples_per_second"]


def test_sweep_expands_to_every_job_and_validates_each():
    jobs = plan_command(["batch_size=8,32", "seed=0,1,2"], multirun=True).run_configs
    assert sorted((j.train.batch_size, j.train.seed) for j in jobs) == [(b, s) for b in (8, 32) for s in (0, 1, 2)]


def test_study_sweep_params_are_expanded():
    jobs = plan_command(["+study=smoke"], multirun=True).run_configs
    assert [j.train.batch_size for j in jobs] == [16, 64] and all(j.train.epochs == 2 for j in jobs)


def test_the_plan_holds_each_job_its_folder_and_the_launcher(tmp_path):
    sweep = tmp_path / "sweep"
    plan = plan_command(["+study=smoke", "seed=0,1", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}"],
                        multirun=True)
    assert plan.output_dir == sweep and plan.launcher.target.endswith("HarnessLauncher")
    # seed-major, as Hydra orders the default sweep (seed first) and a study's keys; no hydra.* override
    assert [sorted(job) for job in plan.jobs] == [sorted(["+study=smoke", f"batch_size={b}", f"seed={s}"])
                                                  for s in (0, 1) for b in (16, 64)]
    assert [(c.train.batch_size, c.train.seed) for c in plan.run_configs] == [(16, 0), (64, 0), (16, 1), (64, 1)]
    single = plan_command(["batch_size=8", f"hydra.run.dir={tmp_path / 'one'}"], multirun=False)
    assert single.jobs == [["batch_size=8"]] and single.output_dir == tmp_path / "one"
    assert [c.train.batch_size for c in single.run_configs] == [8]
    assert not sweep.exists() and not (tmp_path / "one").exists()  # planning writes nothing


@pytest.mark.parametrize("argv,named", [
    (["batch_size=8,0", "-m", "epochs=1"], "batch_size=0 is not allowed: an integer >= 1"),
    (["batch_size=8", "-m", "epochs=1,0"], "epochs=0 is not allowed: an integer >= 1"),
    (["epochs=1", "batch_size=8,0", "--multirun"], "batch_size=0 is not allowed: an integer >= 1"),
])
def test_the_multirun_flag_may_come_anywhere_among_the_overrides(argv, named, capsys, tmp_path, monkeypatch):
    """Each command sweeps (a single run would refuse the comma list) and reads the overrides on both sides of
    the flag: the invalid value is on one side and the error names it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"harness: error: {named}"
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_folder_another_command_is_running_in_is_refused(capsys, tmp_path, monkeypatch):
    """Two commands in one sweep folder would run the same runs at once, each rewriting the other's files."""
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "sweep"
    with cli.output_folder_lock(sweep, "hydra.sweep.dir"):  # as a running command holds it
        assert main(["batch_size=8,32", f"hydra.sweep.dir={sweep}", "-m"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert f"hydra.sweep.dir='{sweep}' is not allowed" in err and f"process {os.getpid()} is running" in err
        assert main(["epochs=1", f"hydra.run.dir={sweep}"]) == 2  # a single run into it, too
    assert [p.name for p in sweep.iterdir()] == [LOCK_FILE]  # nothing else written
    assert [p.name for p in tmp_path.iterdir()] == ["sweep"]


def test_a_sigterm_while_the_command_plans_exits_143_in_one_line(capsys, tmp_path, monkeypatch):
    """Found by the SIGTERM stress test: a signal while Hydra composed the command's jobs left `python -m harness`
    (run by runpy, where an uncaught KeyboardInterrupt is exit 1) with a traceback."""
    import signal

    from harness.run.stop import Interrupted

    def planning(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "plan_command", planning)
    assert main(["batch_size=8,32", f"hydra.sweep.dir={tmp_path / 'sweep'}", "-m"]) == 143
    err = capsys.readouterr().err.strip()
    assert err == "harness: interrupted (SIGTERM) while planning, before any run started: run the command again"


def test_a_sigterm_between_the_planning_and_the_runs_exits_143_in_one_line(capsys, tmp_path, monkeypatch):
    """Found by the SIGTERM stress test on a loaded machine: a signal once the plan was written and before the runs'
    own handler took over left a traceback and exit code 1. The same command again goes on from the plan."""
    import signal

    from harness.run.stop import Interrupted

    def runs_start(*args, **kwargs):  # the signal lands as the runs' stage is entered
        raise Interrupted(signal.SIGTERM)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "_run", runs_start)
    try:
        code = main(["batch_size=8,32", f"hydra.sweep.dir={tmp_path / 'sweep'}", "-m"])
    except KeyboardInterrupt:  # what `python -m harness` printed as a traceback
        pytest.fail("the signal escaped the command")
    assert code == 143
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["harness: interrupted (SIGTERM); run the command again: it goes on from the files written"]
    assert (tmp_path / "sweep" / "sweep.json").exists()  # what the same command goes on from


def test_once_the_command_has_ended_its_process_takes_a_signal_without_raising(monkeypatch, tmp_path):
    """harness/__main__.py ends the process with the command's exit code: a SIGTERM after the command ended is
    recorded, not raised where nothing catches it (a traceback and exit code 1 for a sweep that had completed)."""
    import signal

    from harness.launch import signals
    from harness.run import stop

    monkeypatch.setattr(signals, "_holding", False)
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["batch_size=0"]) == 2  # a command that ends at once (refused)
        with pytest.raises(stop.Interrupted):  # a command called in-process keeps raising
            signals._raise(signal.SIGTERM, None)
        assert main(["batch_size=0"], process_ends=True) == 2
        try:
            signals._raise(signal.SIGTERM, None)
        except KeyboardInterrupt:
            pytest.fail("the signal was raised after the command had ended")
        assert stop.requested == signal.SIGTERM
    finally:
        stop.clear()


def test_a_folder_that_cannot_be_written_is_refused_with_the_reason(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match=r"^hydra.run.dir='.*file/run' is not allowed: a folder this user can "
                                          r"write \(Not a directory\)$"):
        with cli.output_folder_lock(blocker / "run", "hydra.run.dir"):
            pass


@pytest.mark.parametrize("value", ["/tmp/a b", "/tmp/it's", "/tmp/bs\\x", "ends\\", "a\\'b", "\\\\srv\\share", "x,y"])
def test_a_folder_path_survives_quoting_as_a_hydra_override(value):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_override(f"hydra.sweep.dir={compose.quote_override(value)}")
    assert parsed.value() == value


@pytest.mark.slow
def test_multirun_sweeps_batch_size_and_writes_every_run_and_the_report(smoke_sweeps):
    cwd, proc, sweep = smoke_sweeps
    runs = sorted(p for p in sweep.iterdir() if p.is_dir() and p.name.isdigit())
    assert [p.name for p in runs] == ["0", "1"]
    batch_sizes = []
    for run in runs:
        record = json.loads((run / "run.json").read_text())
        assert record["status"] == "completed" and record["epochs_completed"] == 2
        frame = pd.read_parquet(run / "metrics.parquet")
        assert len(frame) == 2 and frame["run_id"].iloc[0] == f"{sweep.name}/{run.name}"
        batch_sizes.append(int(frame["batch_size"].iloc[0]))
        assert (run / ".hydra" / "overrides.yaml").exists()
    assert batch_sizes == [16, 64]
    first, second = (json.loads((run / "run.json").read_text()) for run in runs)
    jobs = json.loads((sweep / "sweep.json").read_text())["jobs"]  # every job, written before any ran
    assert [(j["job"], j["overrides"]) for j in jobs] == [("0", first["overrides"]), ("1", second["overrides"])]
    # n_jobs=2: both runs at once. The launcher prints a progress line whenever the counts change; two runs one
    # after the other never make it say two are running.
    progress = [line for line in proc.stdout.splitlines() if line.startswith("[harness] runs ")]
    assert any("runs 0/2 done · 2 running · 0 failed" in line for line in progress), progress
    assert "runs 2/2 done · 0 running · 0 failed" in progress[-1]
    last_line = proc.stdout.strip().splitlines()[-1]
    assert last_line == str(report.report_path(sweep, Path("reports")))
    assert (cwd / last_line).stat().st_size > 10_000 and (cwd / "reports" / "latest.html").exists()
    assert (cwd / "reports" / "index.html").is_file()


@pytest.mark.slow
def test_the_same_run_gives_identical_metrics_in_another_process(plain_sweep, tmp_path):
    """A single-run command in a fresh process against the shared sweep's run of the same config (batch 16, run in
    a warm worker of the launcher, whose thread setting the single run is given)."""
    from harness.launch.resources import cpu_count

    proc = run_harness(*TINY, "batch_size=16", f"hydra.run.dir={tmp_path / 'single'}", cwd=tmp_path,
                       env={"HARNESS_THREADS": str(cpu_count())})
    assert proc.returncode == 0, proc.stderr[-3000:]
    frames = [pd.read_parquet(folder / "metrics.parquet").drop(columns=TIMING + ["run_id"])
              for folder in (plain_sweep[0] / "sweeps" / "plain" / "0", tmp_path / "single")]
    assert frames[0]["batch_size"].tolist() == [16, 16]
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)


@pytest.mark.slow
def test_invalid_value_anywhere_in_a_sweep_runs_nothing(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run_harness("dataset=fashion_mnist,mnist1d", "dataset.num_samples=null", "epochs=1",
                       f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 2 and not sweep.exists(), proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines() == [
        "harness: error: dataset.num_samples=None is not allowed: an integer >= 200"]


@pytest.mark.slow
def test_failed_and_diverged_runs_are_recorded_the_others_go_on_and_the_report_is_written(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run_harness(
        "dataset=digits,fashion_mnist", "lr=1e12,0.01", "optimizer=sgd", "model=mlp", "epochs=3", "seed=0",
        "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path, env={"KERAS_HOME": str(tmp_path / "empty-keras")},
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    status = {}
    for num in range(4):
        record = json.loads((sweep / str(num) / "run.json").read_text())
        status[record["config"]["dataset"], record["config"]["lr"]] = record
    assert status["digits", 1e12]["status"] == "diverged"
    assert status["digits", 0.01]["status"] == "completed"
    for lr in (1e12, 0.01):
        failed = status["fashion_mnist", lr]
        assert failed["status"] == "failed" and failed["error"]["type"] == "DataUnavailable"
        assert "dataset=mnist1d" in failed["error"]["message"]
    assert "2 run(s) failed: sweep/2, sweep/3" in proc.stderr
    report = (tmp_path / proc.stdout.strip().splitlines()[-1]).read_text()
    assert "DataUnavailable" in report and "diverged" in report  # the report was still written


@pytest.mark.slow
def test_flags_first_and_a_folder_with_its_own_clock_each_write_exactly_one_folder(tmp_path):
    sweep = tmp_path / "flags-first"
    proc = run_harness("-m", *TINY, "epochs=1", "batch_size=64", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((sweep / "0" / "run.json").read_text())["status"] == "completed"
    clocked = tmp_path / "clocked"
    proc = run_harness(*TINY, "epochs=1", f"hydra.run.dir={clocked}/r_${{now:%H-%M-%S-%f}}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [run_dir] = clocked.iterdir()  # the folder checked and locked is the one written
    assert (run_dir / "metrics.parquet").exists()


def test_the_main_job_runs_three_seeds_per_batch_size_unless_the_command_says(tmp_path):
    main_job = plan_command(["batch_size=8,32,64,128"], multirun=True).run_configs
    assert sorted((c.train.batch_size, c.train.seed) for c in main_job) == [
        (b, s) for b in (8, 32, 64, 128) for s in (0, 1, 2)]
    assert [c.train.seed for c in plan_command(["batch_size=8,32", "seed=0"], multirun=True).run_configs] == [0, 0]
    five = plan_command(["batch_size=8", "seed=0,1,2,3,4"], multirun=True).run_configs
    assert [c.train.seed for c in five] == [0, 1, 2, 3, 4]
    single = plan_command(["batch_size=8", f"hydra.run.dir={tmp_path / 'one'}"], multirun=False).run_configs
    assert [c.train.seed for c in single] == [0]  # a single run is one run, with the config's seed
    assert [c.train.seed for c in plan_command(["+study=smoke"], multirun=True).run_configs] == [0, 0]
    assert {c.train.seed for c in plan_command(["+study=controls"], multirun=True).run_configs} == {0, 1}


def test_a_machine_without_the_reports_libraries_ends_its_sweep_with_one_warning_and_no_report(tmp_path):
    """A GPU machine given only what runs need (scripts/gpu_smoke.sh jax): the sweep's end says where the report
    can be built instead of failing after every run has finished."""
    import subprocess
    import sys

    from tests.helpers.sweeps import batch_sweep

    sweep = batch_sweep(tmp_path / "s", {8: [0.8, 0.79], 64: [0.7, 0.72]})
    code = ("import sys; from pathlib import Path; sys.modules['jinja2'] = None; from harness.launch import sweep_end; "
            "sweep_end.prepare_report(); sweep_end.write_report(Path(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-c", code, str(sweep)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.strip() == (f"harness: warning: no report here: it needs jinja2, which is not installed; "
                                   f"build it where it is with: python -m harness.report {sweep}")
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("interrupted", [False, True])
def test_a_signal_while_the_report_is_written_exits_with_the_signals_code_in_one_line(interrupted, capsys, tmp_path,
                                                                                      monkeypatch):
    """SIGTERM once the runs have ended (the report's imports, its figures) left a traceback and exit code 1; after
    an interrupt, a second signal did the same. Now: one line naming the signal and how to build the report, exit
    143, whether the runs ended or were interrupted."""
    import signal
    from types import SimpleNamespace

    from harness.launch import sweep_end
    from harness.run.stop import Interrupted

    def sigterm(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)

    def run_hydra():
        if interrupted:
            raise KeyboardInterrupt
    monkeypatch.setattr(sweep_end, "close", sigterm)
    monkeypatch.setattr(cli.sweep_files, "failed_runs", lambda folder: [])
    monkeypatch.setattr(cli.sweep_files, "unfinished_runs", lambda folder: [])
    (tmp_path / "sweep").mkdir()
    code = cli._run(SimpleNamespace(multirun=True), tmp_path / "sweep", run_hydra)
    err = capsys.readouterr().err
    assert code == 143 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == ("harness: interrupted (SIGTERM) while writing the report; the runs' files "
                                            f"are complete: build it with python -m harness.report {tmp_path / 'sweep'}")


def test_a_round_its_study_could_not_plan_ends_the_command_with_one_line_and_exit_2_once(capsys, tmp_path,
                                                                                         monkeypatch):
    """A study's round that cannot be planned (harness.launch.rounds writes sweep.json's `stopped`) was a Hydra
    traceback and exit 1; now the runs' report is written, one line says why, exit 2. The same command run again
    plans no more rounds and does not say it again."""
    from types import SimpleNamespace

    from harness.launch import sweep_end
    from harness.store import sweep_file

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    sweep_file.write(sweep, {"jobs": [], "more_rounds": True})

    def run_hydra():  # as the sweeper leaves sweep.json when the study's round 2 raised
        sweep_file.write(sweep, {"jobs": [], "more_rounds": False, "stopped": {"round": 2, "error": "x=1 is bad"}})

    closed = []
    monkeypatch.setattr(sweep_end, "close", lambda *args, **kwargs: closed.append(args[0]))
    monkeypatch.setattr(cli.sweep_files, "failed_runs", lambda folder: [])
    monkeypatch.setattr(cli.sweep_files, "unfinished_runs", lambda folder: [])
    assert cli._run(SimpleNamespace(multirun=True), sweep, run_hydra) == 2 and closed == [sweep]
    err = capsys.readouterr().err
    assert err.strip() == "harness: error: round 2 could not be planned: x=1 is bad"
    assert cli._run(SimpleNamespace(multirun=True), sweep, lambda: None) == 0  # resumed: nothing left to plan
    assert "error" not in capsys.readouterr().err
