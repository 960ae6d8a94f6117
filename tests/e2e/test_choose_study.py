"""+study=choose end to end on a small MNIST-1D: the baseline sets the target, every later round is planned from
the files of the one before, every target run stops at the target or the cap and says how long it took, and the
report, the results table and resume read it."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_a_choice_runs_its_rounds_and_its_report_shows_every_batch_size_s_steps(tmp_path):
    from tests.conftest import run_harness
    from tests.helpers import page

    sweep = tmp_path / "sweep"
    proc = run_harness("+study=choose", "batch_size=16,64", "dataset.num_samples=1000", "epochs=2", "seed=0,1",
                       "choose.rules=[linear]", "choose.lr_grid=[2.0]", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((sweep / "sweep.json").read_text())
    assert plan["rounds"] == 4 and plan["more_rounds"] is False
    arms = {**plan["choose"]["arms"], **{job["job"]: job["arm"] for job in plan["jobs"] if job.get("arm")}}
    assert sorted(set(arms.values()))[:2] == ["baseline", "bs16_as_is"]
    target = None
    for job, name in arms.items():
        record = json.loads((sweep / job / "run.json").read_text())
        assert record["status"] == "completed" and record["config"]["probes"] is False
        if name == "baseline":
            assert record["config"]["target_tune_acc"] is None and record["config"]["epochs"] == 2
            continue
        found = json.loads((sweep / job / "target.json").read_text())
        target = target or found["target_tune_acc"]
        assert found["target_tune_acc"] == target and record["config"]["epochs"] == 6  # the cap: 3 x 2
        assert (found["seconds_to_target"] is None) == (found["steps_to_target"] is None)
    table = subprocess.run([sys.executable, "-m", "harness.results", str(sweep)], capture_output=True, text=True,
                           check=True, cwd=tmp_path).stdout
    assert f"choose: target tune_acc {target:g}" in table and "batch 64:" in table
    text = page.text(page.parse((tmp_path / "reports" / "latest.html").read_text()))
    assert f"Steps to tune_acc {target:g} on the tuning slice at every batch size" in text
    assert "No completed runs yet" not in text
