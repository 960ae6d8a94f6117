"""+study=choose end to end on a small MNIST-1D: the baseline sets the target, every later round is planned from
the files of the one before, every target run stops at the target or the cap and says how long it took, the
confirmation (each judging seed's time, as printed) and the check run one at a time, and choice.json, the report and
the results table give the answer."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_a_choice_runs_its_rounds_times_each_judging_seed_alone_as_printed_and_answers(tmp_path):
    from tests.conftest import run_harness
    from tests.helpers import page

    sweep = tmp_path / "sweep"
    proc = run_harness("+study=choose", "batch_size=16,64", "dataset.num_samples=1000", "epochs=2", "seed=0,1",
                       "choose.rules=[linear]", "choose.lr_grid=[2.0]", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((sweep / "sweep.json").read_text())
    assert plan["rounds"] == 5 and plan["more_rounds"] is False
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
    # the confirmation (each judging seed's time) and the check: one at a time, as printed
    alone = [job["job"] for job in plan["jobs"] if job.get("alone")]
    kinds = ["check" if arms[job].startswith("check_") else "confirm" for job in alone]
    assert kinds == ["confirm"] * kinds.count("confirm") + ["check"] * kinds.count("check")
    assert kinds.count("confirm") >= 2 and all("target_check=epoch" in job["overrides"] for job in plan["jobs"]
                                               if job.get("alone"))
    spans = sorted((json.loads((sweep / job / "run.json").read_text())["started_at"],
                    json.loads((sweep / job / "run.json").read_text())["finished_at"]) for job in alone)
    assert all(before[1] <= after[0] for before, after in zip(spans, spans[1:]))
    # each in a process of its own, cold, as the printed command starts
    assert all(json.loads((sweep / job / "run.json").read_text())["environment"]["earlier_runs_in_process"] == 0
               for job in alone)
    chosen = json.loads((sweep / "choice.json").read_text())
    assert chosen["answer"]["batch"] in (16, 64) and chosen["machine"].endswith("CPU cores, TensorFlow")
    answer = chosen["answer"]
    # each judging seed's time is what its own run recorded: read back from run.json
    times = {(t["batch"], t["candidate"]): t["times"] for t in chosen["sizes"]}
    by_arm = {name: job for job, name in arms.items()}
    for job in alone:
        record = json.loads((sweep / job / "run.json").read_text())
        key = (record["config"]["batch_size"], arms[job].split("_", 1)[1])
        if arms[job].startswith("check_") or key not in times:
            continue
        seed = record["config"]["seed"]
        assert times[key][chosen["seeds"].index(seed)] == record["seconds_to_target"], (by_arm, key)
    as_is = answer["batch"] == 16 and answer["candidate"] == "as_is"  # then it is checked once
    assert [c["batch"] for c in chosen["checks"]] == [answer["batch"]] + ([] if as_is else [16])
    assert kinds.count("check") == len(chosen["checks"])
    assert all(c["seed"] == 2 and c["predicted"] > 0 for c in chosen["checks"])  # the seed after the command's
    for check in chosen["checks"]:  # what the rerun recorded, or a miss that says the time is uncertain
        assert (check["measured"] is None) == (check["outcome"] != "reached")
        assert check["outcome"] == "reached" or "uncertain" in chosen["headline"]
    table = subprocess.run([sys.executable, "-m", "harness.results", str(sweep)], capture_output=True, text=True,
                           check=True, cwd=tmp_path).stdout
    assert f"choose: target tune_acc {target:g}" in table and "batch 64:" in table
    text = page.text(page.parse((tmp_path / "reports" / "latest.html").read_text()))
    assert "Which batch size?" in text and chosen["headline"] in text and "No completed runs yet" not in text
