"""A user's own study, from a folder outside the package (tests/fixtures/own-study: its preset in study/toy.yaml,
its code in studies/toy/), end to end on a little MNIST-1D: found by `--config-dir`, its settings checked, its run
hook run, its section in the report, its column in `python -m harness.results` and its line in the findings; and
found again from sweep.json by commands that are not given the folder."""
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_harness
from tests.helpers import page

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
OWN_STUDY = REPO / "tests" / "fixtures" / "own-study"


def test_a_users_own_study_runs_reports_and_is_found_again_from_its_sweep(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(OWN_STUDY, conf, ignore=shutil.ignore_patterns("__pycache__"))
    sweep = tmp_path / "sweeps" / "toy"
    refused = run_harness("--config-dir", str(conf), "+study=toy", "toy.note=[1,2]", f"hydra.sweep.dir={sweep}", "-m",
                          cwd=tmp_path)
    assert refused.returncode == 2 and "toy.note=[1, 2] is not allowed: a string" in refused.stderr
    assert not sweep.exists()

    proc = run_harness("--config-dir", str(conf), "+study=toy", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((sweep / "sweep.json").read_text())
    assert plan["study"] == "toy" and plan["study_paths"] == [str(conf / "studies")]
    assert [(sweep / job["job"] / "toy.txt").read_text() for job in plan["jobs"]] == \
        ["a user's own study: 480 training samples"] * 2  # the run hook, in each run's process
    report = page.parse((tmp_path / proc.stdout.strip().splitlines()[-1]).read_text())
    assert page.text(report.find("h2", id="toy")) == "The toy study"
    assert "Batch 64 ends at val_acc" in page.section(report, "toy")

    # no --config-dir from here on: the study is found from sweep.json's study_paths (in this process, which was
    # given no folder of the user's)
    from harness.report import html, results
    from scripts.findings import summarize

    rebuilt = html.write_report(sweep, tmp_path / "elsewhere")
    assert "Batch 64 ends at val_acc" in page.section(page.parse(rebuilt.read_text()), "toy")
    table = results.sweep_results(sweep)
    assert list(table.columns[:4]) == ["sweep", "run_id", "job", "toy_note"] and set(table["toy_note"]) == {"noted"}
    assert "- toy: batch 64 ends at val_acc" in summarize(sweep)
