"""python -m harness.resume SWEEP --add-seeds N (harness.launch.added_seeds): every arm of the main job on new seeds,
as new jobs numbered after the sweep's, kept by later resumes; a study that does not say which runs a new seed needs,
a sweep without seeds or a bad N is refused in one line; and the real thing, on a tiny main job: 4 runs, 2 added, 6 in one report."""
import json
import re
import subprocess
import sys

import pytest

from harness.launch import added_seeds
from harness.store import sweep_file
from tests.conftest import run_harness

TINY = ["dataset.num_samples=600", "epochs=2", "probes=false"]


def _content(sizes=(8, 32), seeds=(0, 1), study=None):
    jobs = [{"job": str(n), "round": 1, "overrides": [f"batch_size={b}", f"seed={s}", "epochs=2"], "config": "c"}
            for n, (b, s) in enumerate((b, s) for b in sizes for s in seeds)]
    return {"format": 2, "study": study, "jobs": jobs, "rounds": 1}


def test_every_arm_runs_on_each_new_seed_after_the_highest_its_seed_where_it_was():
    assert added_seeds.new_jobs(_content(), 2) == [
        (["batch_size=8", "seed=2", "epochs=2"], 2, None, False), (["batch_size=32", "seed=2", "epochs=2"], 2, None, False),
        (["batch_size=8", "seed=3", "epochs=2"], 3, None, False), (["batch_size=32", "seed=3", "epochs=2"], 3, None, False)]


@pytest.mark.parametrize("content,why", [
    (_content(study="diagnose"), "a sweep whose runs a new seed can extend (+study=diagnose: which of its runs a new "
                                 "seed needs is not said by this study)"),
    ({**_content(study="recover"), "recover": {"seeds": [0, 1], "settings": {"judge": 0}}},
     "an older sweep, judged on the seeds that chose its recipe"),
    ({"format": 2, "study": None, "jobs": [{"job": "0", "overrides": ["batch_size=8"], "config": "c"}]},
     "a sweep whose jobs set seed="),
])
def test_a_sweep_it_cannot_add_to_is_refused_with_why(content, why):
    with pytest.raises(added_seeds.CannotAdd, match=re.escape(why)):
        added_seeds.new_jobs(content, 1)


def test_a_resume_of_the_same_command_keeps_the_added_jobs_and_says_they_were_added():
    earlier = _content()
    added = {"job": "4", "round": 1, "overrides": ["batch_size=8", "seed=2", "epochs=2"], "config": "c", "added": True}
    earlier = {**earlier, "jobs": [*earlier["jobs"], added], "added_seeds": [{"seeds": [2], "jobs": ["4"]}]}
    again = sweep_file.keep_later_rounds(_content(), earlier)
    assert again["jobs"][-1] == added and again["added_seeds"] == earlier["added_seeds"]
    assert sweep_file.keep_later_rounds(_content(sizes=(8, 64)), earlier)["jobs"] == _content(sizes=(8, 64))["jobs"]


def test_a_bad_count_or_a_study_is_one_line_exit_2(tmp_path):
    """The folder as given from where the resume runs (here relative), not from the folder its command ran in."""
    sweep = tmp_path / "s"
    sweep.mkdir()
    (tmp_path / "project").mkdir()
    (sweep / "sweep.json").write_text(json.dumps(_content(study="diagnose")))
    (sweep / "command.json").write_text(json.dumps({"argv": ["-m"], "cwd": str(tmp_path / "project"),
                                                    "multirun": True, "harness_version": None, "keras_version": None}))
    for count, said in (("0", "--add-seeds=0 is not allowed: --add-seeds 0: a number of seeds >= 1"),
                        ("1", "--add-seeds=1 is not allowed: a sweep whose runs a new seed can extend "
                              "(+study=diagnose:")):
        proc = subprocess.run([sys.executable, "-m", "harness.resume", "s", "--add-seeds", count], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, \
            proc.stderr
    assert json.loads((sweep / "sweep.json").read_text()) == _content(study="diagnose")  # nothing written


def test_a_sweep_whose_command_still_runs_is_refused_and_its_plan_left_alone(tmp_path):
    """The command that runs a sweep holds its folder and rewrites sweep.json as it goes: seeds are added only once
    it has ended (while it runs, what was added would be reported not started, and added again by a retry)."""
    from harness.store import files

    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps(_content()))
    with files.folder_lock(sweep):  # the running command
        with pytest.raises(added_seeds.CannotAdd, match=r"a sweep no command is running in \(process \d+ is running"):
            added_seeds.add(sweep, 1, lambda job: None)
    assert json.loads((sweep / "sweep.json").read_text()) == _content()
    with pytest.raises(added_seeds.CannotAdd, match="a sweep with a readable sweep.json"):
        added_seeds.add(tmp_path / "nowhere", 1, lambda job: None)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.slow
def test_the_main_job_at_two_seeds_gets_a_third_in_the_same_folder_and_one_report(tmp_path):
    """The main job (2 batch sizes) at seed=0,1, then --add-seeds 1: jobs 4-5 run the 2 arms on seed 2, the other
    runs are left alone, and the report reads all 6 and says the seed was added after a look."""
    sweep = tmp_path / "sweep"
    first = run_harness("batch_size=8,64", "seed=0,1", *TINY, f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    finished = {n: (sweep / str(n) / "run.json").stat().st_mtime_ns for n in range(4)}
    proc = subprocess.run([sys.executable, "-m", "harness.resume", str(sweep), "--add-seeds", "1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 runs added (jobs 4-5)" in proc.stderr
    plan = json.loads((sweep / "sweep.json").read_text())
    assert len(plan["jobs"]) == 6 and [j["added"] for j in plan["jobs"]] == [False] * 4 + [True] * 2
    assert plan["added_seeds"][0]["seeds"] == [2] and plan["added_seeds"][0]["jobs"] == ["4", "5"]
    for n in range(4, 6):
        record = json.loads((sweep / str(n) / "run.json").read_text())
        assert record["status"] == "completed" and record["config"]["seed"] == 2
    assert {n: (sweep / str(n) / "run.json").stat().st_mtime_ns for n in range(4)} == finished  # left alone
    report = (tmp_path / proc.stdout.strip().splitlines()[-1]).read_text()
    assert "6 run(s): 6 completed" in report and "Seed 2 was added to this sweep after a look" in report


def test_the_sweeper_launches_a_study_s_added_jobs_apart_from_round_one_numbered_as_planned():
    """A launch numbers its jobs from its first: round 1 (jobs 0-25) and the seeds added after a study's later
    rounds (jobs 60-62) are two launches, or the added jobs would take the numbers (and the finished folders) of
    round 2's first runs and never run (a real recover sweep's resume did so, once)."""
    from hydra_plugins.harness_sweeper.sweeper import _consecutive

    jobs = [sweep_file.PlannedJob(job=str(n), overrides=[], config="c") for n in [*range(26), 60, 61, 62]]
    assert [[job.num for job in stretch] for stretch in _consecutive(jobs)] == [list(range(26)), [60, 61, 62]]
    assert _consecutive([]) == []


@pytest.mark.slow
def test_a_recover_sweep_gets_b_big_and_the_recipe_on_the_seed_added_and_its_rounds_stay(tmp_path):
    """A tiny +study=recover, then --add-seeds 1 as its undecided verdict would print it: the three runs its verdict
    pairs run on the new seed, numbered after the study's later rounds, in the same folder; no other run runs again,
    the plan's rounds are as they were, and the verdict reads the new seed beside those that judged."""
    sweep = tmp_path / "sweep"
    study = ["+study=recover", "batch_size=16,64", "seed=0,1", "dataset.num_samples=600", "epochs=1", "probes=false",
             "recover.trials=2", "recover.guided=0", "recover.confirm=1", "recover.budget=false", "recover.rules=[linear]",
             "recover.judge=1"]
    first = run_harness(*study, f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    before = json.loads((sweep / "sweep.json").read_text())["jobs"]
    finished = {job["job"]: (sweep / job["job"] / "run.json").stat().st_mtime_ns for job in before}
    proc = subprocess.run([sys.executable, "-m", "harness.resume", str(sweep), "--add-seeds", "1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads((sweep / "sweep.json").read_text())
    added = [job for job in plan["jobs"] if job.get("added")]
    assert [job for job in plan["jobs"] if not job.get("added")] == before  # every round as planned
    assert [int(job["job"]) for job in added] == list(range(len(before), len(before) + 3))
    judged = json.loads((sweep / "recovery.json").read_text())
    recipe = f"trial_{judged['recipe_trial']}"
    assert [job["arm"] for job in added] == ["as_is", "as_is", recipe]
    for job in added:
        record = json.loads((sweep / job["job"] / "run.json").read_text())
        assert record["status"] == "completed" and record["config"]["seed"] == 3  # after the judging seed 2
    assert {job["job"]: (sweep / job["job"] / "run.json").stat().st_mtime_ns for job in before} == finished
    assert judged["judged"] == [2, 3]
