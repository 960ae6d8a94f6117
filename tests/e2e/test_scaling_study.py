"""+study=scaling shrunken end to end (slow): runs stop within an epoch at the target, record steps and samples to
it in run.json, target.json and the results table, and the report has its section."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from harness.config.batching import plan_batches, samples_seen


@pytest.mark.slow
def test_the_scaling_study_stops_each_run_at_its_target_and_reports_how_far_the_batch_scales(tmp_path):
    from tests.conftest import run_harness

    sweep = tmp_path / "sweep"
    # one learning rate a batch size (choosing among several is tests/studies/scaling/test_reading.py's): 3 runs
    proc = run_harness("+study=scaling", "dataset.num_samples=1000", "batch_size=16,64,256", "lr_factor=2.83",
                       "seed=0", "epochs=20", "target_tune_acc=0.5", f"hydra.sweep.dir={sweep}", "-m",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sorted(sweep.glob("*/run.json"))
    assert len(runs) == 3
    for path in runs:
        record, found = json.loads(path.read_text()), json.loads((path.parent / "target.json").read_text())
        metrics = pd.read_parquet(path.parent / "metrics.parquet")
        last = metrics.iloc[-1]
        steps = record["steps_to_target"]
        assert record["status"] == "completed" and steps == found["steps_to_target"] == last["step"]
        plan = plan_batches(int(last["global_batch_size"]), False, 1, int(last["train_size"]))
        assert record["samples_to_target"] == found["samples_to_target"] == samples_seen(plan, steps)
        # stopped at the check that saw the target: the epoch's own evaluation of the tuning slice agrees
        assert found["tune_acc_at_target"] >= 0.5 and last["tune_acc"] == pytest.approx(found["tune_acc_at_target"])
        assert last["val_acc"] == pytest.approx(found["val_acc_at_target"])
        assert 0 < found["target_resolution"] <= 1 and found["target_checks"] >= 1
        # the time to it (its arithmetic is tests/run/test_target.py's, on a controlled clock): recorded in both
        # files, and the last check's entry is the one that saw the target
        assert found["seconds_to_target"] == record["seconds_to_target"] and found["check_seconds"] > 0
        assert found["check_times"][-1][:2] == [steps, round(found["seconds_to_target"], 4)]
        gram = np.array(found["noise_gram"])
        assert gram.shape == (32, 32) and np.allclose(gram, gram.T)
    out = tmp_path / "results.csv"
    subprocess.run([sys.executable, "-m", "harness.results", str(sweep), "--out", str(out)], check=True)
    results = pd.read_csv(out)
    assert results["steps_to_target"].notna().all() and (results["samples_to_target"] > 0).all()
    assert (results["seconds_to_target"] > 0).all()
    from tests.helpers import page

    parsed = page.parse((tmp_path / proc.stdout.strip().splitlines()[-1]).read_text())
    assert page.text(parsed.find("h2", id="scaling")) == "How far does the batch scale?"
    figures_shown = [img["alt"] for node in page.section_nodes(parsed, "scaling") if getattr(node, "find_all", None)
                     for img in node.find_all("img")]
    assert figures_shown == ["Steps and samples to the target vs batch size", "Validation accuracy at the target"]
    from harness.studies.registry import assess
    from harness.studies.scaling.figures import figures
    from tests.helpers import layout

    a = assess(sweep)
    [scaled] = a.reading  # one curve: nothing else varies
    assert [p.batch for p in scaled.points] == [16, 64, 256] and scaled.fit is not None and scaled.group == ""
    assert scaled.headline in " ".join(page.text(block) for block in page.blocks(parsed))
    assert not a.batch_verdicts  # no verdict per lr_factor
    drawn = figures(a)
    assert len(drawn) == 2 and all(layout.problems(fig) == [] for _, fig, _ in drawn)
