"""Resume as printed: an interrupted sweep in the default folder is resumed by the exact line the command printed,
from another directory; the same command again finds its unfinished sweep."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.launch.resume import unfinished_sweep
from harness.store import command_file
from tests.helpers.runs import frozen, record, wait_for_signal

pytestmark = pytest.mark.slow
# batch 16, then 64, one at a time in one warm worker (the default launcher's)
EPOCHS = 20
COMMAND = ["+study=smoke", f"epochs={EPOCHS}", "hydra.launcher.n_jobs=1", "-m"]


def _interrupted_after_its_first_run(cwd: Path, attempts: int = 3) -> tuple[Path, str]:
    """The smoke sweep in its default folder, Ctrl-C'd while its second run trains (frozen while the signal is
    sent); (its folder, what it printed on stderr). A loaded machine may let the short second run finish, or come
    within two epochs of its end (a signal in its last epoch may find it done), before it is frozen: then it starts
    again in a new directory."""
    for attempt in range(attempts):
        here = cwd / f"try-{attempt}"
        here.mkdir()
        proc = subprocess.Popen([sys.executable, "-m", "harness", *COMMAND], cwd=here, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 240
        second = None
        while second is None and time.monotonic() < deadline and proc.poll() is None:
            found = list(here.glob("sweeps/*/1/run.json"))
            second = found[0].parent if found else None
            time.sleep(0.05)
        if second is None:
            proc.communicate(timeout=300)
            continue
        worker = record(second)["environment"]["pid"]
        with frozen(worker):
            now = record(second)
            if now["status"] == "running" and (now.get("epochs_completed") or 0) <= EPOCHS - 3:
                proc.send_signal(signal.SIGINT)
                wait_for_signal(worker, signal.SIGINT)  # forwarded while frozen: a starved command forwards late
                sent = True
            else:
                sent = False
        _, err = proc.communicate(timeout=300)
        if sent:
            assert proc.returncode == 130, err[-3000:]
            return second.parent, err
    raise AssertionError(f"the second run finished before it could be frozen, {attempts} times")


def test_an_interrupted_sweep_resumes_by_the_printed_line_from_another_directory(tmp_path):
    sweep, err = _interrupted_after_its_first_run(tmp_path)
    line = err.strip().splitlines()
    printed = [text.split("resume with: ", 1)[1] for text in line if "resume with: " in text]
    assert printed == [f"python -m harness.resume {sweep.resolve()}"], err[-3000:]
    first = (sweep / "0" / "run.json").read_bytes()
    assert json.loads(first)["status"] == "completed" and record(sweep / "1")["status"] == "interrupted"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = subprocess.run([sys.executable, *printed[0].split()[1:]], cwd=elsewhere, capture_output=True,
                             text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (sweep / "0" / "run.json").read_bytes() == first  # the completed run did not train again
    assert record(sweep / "1")["status"] == "completed"  # frozen at any point of its start or its epochs
    assert [p.name for p in (sweep.parent).iterdir()] == [sweep.name]  # the same folder, no second one
    report = sweep.parent.parent / resumed.stdout.strip().splitlines()[-1]  # relative to the command's directory
    assert report.exists() and "2 completed" in report.read_text()
    assert not list(elsewhere.iterdir())  # nothing written where the resume was typed


def _sweep_with(folder: Path, argv: list[str], cwd: Path, statuses: list[str]) -> Path:
    """A sweep folder as a command leaves it: command.json, sweep.json, a run.json per status given."""
    folder.mkdir(parents=True)
    command_file.write_once(folder, command_file.Command(argv=argv, cwd=str(cwd), multirun=True, harness_version=None,
                                                         keras_version=None, started_at=folder.name))
    jobs = [{"job": str(n), "overrides": [f"seed={n}"], "config": f"c{n}"} for n in range(2)]
    (folder / "sweep.json").write_text(json.dumps({"format": 2, "study": None, "jobs": jobs}))
    for n, status in enumerate(statuses):
        (folder / str(n)).mkdir()
        (folder / str(n) / "run.json").write_text(json.dumps(
            {"run_id": f"{folder.name}/{n}", "status": status, "overrides": [f"seed={n}"]}))
    return folder


def test_the_same_command_finds_its_newest_sweep_only_while_it_has_runs_left(tmp_path):
    argv = ["seed=0,1", "-m"]
    sweeps = tmp_path / "sweeps"
    older = _sweep_with(sweeps / "2026-12-01_09-00-00", argv, tmp_path, ["completed"])  # one not started
    assert unfinished_sweep(sweeps, argv, tmp_path) == older
    assert unfinished_sweep(sweeps, ["seed=0,1,2", "-m"], tmp_path) is None  # another command
    assert unfinished_sweep(sweeps, argv, tmp_path / "other") is None  # another directory
    newer = _sweep_with(sweeps / "2026-12-02_09-00-00", argv, tmp_path, ["completed", "failed"])
    assert unfinished_sweep(sweeps, argv, tmp_path) == newer  # a failed run is run again
    _sweep_with(sweeps / "2026-12-03_09-00-00", argv, tmp_path, ["completed", "diverged"])
    assert unfinished_sweep(sweeps, argv, tmp_path) is None  # the newest finished: a new sweep


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_a_sweep_made_before_the_recipe_keys_resumes_and_keeps_its_finished_run(tmp_path):
    """tests/fixtures/sweep-before-recipe: a two-run sweep made by the harness before momentum, nesterov,
    weight_decay, lr_schedule and label_smoothing existed (its sweep.json, command.json and run 0 as that code wrote
    them; run 1 never started). Its command today composes those keys at their defaults, which are no part of a
    run's identity: run 0 is already done and left as it is, run 1 trains and records the recipe in force."""
    import shutil

    sweep = tmp_path / "old"
    shutil.copytree(FIXTURES / "sweep-before-recipe", sweep)
    finished = record(sweep / "0")
    assert "recipe" not in finished and "lr_schedule" not in finished["config"]  # the code before the keys
    proc = subprocess.run([sys.executable, "-m", "harness", "dataset.num_samples=600", "epochs=1", "probes=false",
                           "seed=0", "batch_size=16,32", f"hydra.sweep.dir={sweep}", "-m"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "1 already done" in proc.stdout + proc.stderr
    assert record(sweep / "0") == finished  # not run again, not rewritten
    resumed = record(sweep / "1")
    assert resumed["status"] == "completed" and resumed["recipe"]["lr_schedule"] == "constant"
