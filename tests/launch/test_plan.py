"""The command's one plan (harness.launch.plan): Hydra's sweeper and launcher run the jobs and configs the command
line planned, without expanding or composing a job again."""
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from harness.launch.cli import plan_command
from harness.store.run_files import config_hash

# The command in a process of its own (Hydra sets up logging and global state for a whole process), with Hydra's
# per-job composition counted and the scheduler replaced by a recorder: nothing trains.
RECORDED = textwrap.dedent("""
    import json, sys
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    import harness.launch.scheduler as scheduler
    from harness.launch.cli import main

    composed, launched = [], []
    ConfigLoaderImpl.load_sweep_config = lambda self, *args, **kwargs: composed.append(args)

    class Recorder:
        def __init__(self, jobs, *args, **kwargs):
            launched.extend(jobs)
            self.idle = []  # no warm worker to hand to a next round

        def run(self, then=None):
            pass

    scheduler.Scheduler = Recorder
    code = main(sys.argv[2:])
    jobs = [{"overrides": j.overrides, "gpus": j.gpus, "backend": j.backend, "epochs": j.epochs, "steps": j.steps,
             "warm": j.worker_args is not None, "run_dir": str(j.run_dir)} for j in launched]
    with open(sys.argv[1], "w") as out:
        json.dump({"code": code, "composed": len(composed), "launched": jobs}, out)
""")


def test_the_launcher_runs_the_commands_plan_without_composing_a_job_again(tmp_path):
    """Hydra's basic sweeper would expand the command again and validate every job with load_sweep_config, and the
    launcher compose each once more: here neither is called, and what the launcher starts is sweep.json's jobs
    as the plan made them (a diagnosis's computed arms included), read from that file alone."""
    sweep, record = tmp_path / "sweep", tmp_path / "launched.json"
    command = ["+study=diagnose", "batch_size=8,64", "seed=0,1", "model.batch_norm=true", "epochs=2"]
    proc = subprocess.run([sys.executable, "-c", RECORDED, str(record), *command, f"hydra.sweep.dir={sweep}", "-m"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert record.exists(), proc.stderr[-3000:]
    found = json.loads(record.read_text())
    assert found["code"] == 1 and "18 run(s) did not finish" in proc.stderr  # nothing ran: none started (9 a seed)
    assert found["composed"] == 0
    planned = json.loads((sweep / "sweep.json").read_text())["jobs"]
    assert len(planned) == 18 and [job["overrides"] for job in found["launched"]] == [j["overrides"] for j in planned]
    expected = plan_command([*command, f"hydra.sweep.dir={tmp_path / 'other'}"], multirun=True)
    assert [job["config"] for job in planned] == [config_hash(cfg.identity()) for cfg in expected.run_configs]
    assert [(job["gpus"], job["backend"], job["epochs"], job["warm"]) for job in found["launched"]] == [
        (0, "tensorflow", job["epochs"], True) for job in planned]
    # the arms with b's updates train B/b times b's epochs: what the progress line's ETA weighs each run by
    assert sorted({job["epochs"] for job in found["launched"]}) == [2, 16]
    # and the steps the launcher starts the longest first by: batch 8's 2 epochs take 8 times batch 64's, the arm
    # with b's updates as many as batch 8
    steps = {(job["epochs"], "batch_size=8" in job["overrides"]): job["steps"] for job in found["launched"]}
    assert 7.5 <= steps[(2, True)] / steps[(2, False)] <= 8.5 and steps[(2, True)] == steps[(16, False)]
    assert [job["steps"] for job in found["launched"]] == [job["steps"] for job in planned]
    assert [job["run_dir"] for job in found["launched"]] == [str(sweep / str(num)) for num in range(18)]


# The command with the scheduler's loop recording which jobs it would start (nothing trains) and the sweep's end
# (interpolation, report) left out.
PENDING = textwrap.dedent("""
    import json, sys
    import harness.launch.scheduler as scheduler
    import harness.launch.sweep_end as sweep_end
    from harness.launch.cli import main

    started = []
    scheduler.Scheduler._loop = lambda self, pending, running, t: started.extend(job.num for job in pending)
    sweep_end.interpolate = sweep_end.write_report = lambda *args, **kwargs: None
    main(sys.argv[2:])
    with open(sys.argv[1], "w") as out:
        json.dump(started, out)
""")


@pytest.mark.slow  # a constructed sweep of 1,000 runs
def test_a_resumed_sweep_of_a_thousand_runs_starts_only_the_missing_ones(thousand_runs, tmp_path):
    """The same command again on a folder where most runs are done: the plan's fingerprints match sweep.json's, and
    only the jobs without a finished run (not started, interrupted, damaged) are started."""
    from tests.conftest import THOUSAND, copy_sweep

    sweep = copy_sweep(thousand_runs, tmp_path / "sweep")
    shutil.rmtree(sweep / "17")  # never started
    record = json.loads((sweep / "503" / "run.json").read_text())
    (sweep / "503" / "run.json").write_text(json.dumps({**record, "status": "interrupted"}))  # killed
    (sweep / "998" / "metrics.parquet").write_bytes(b"PAR1 truncated")  # damaged by a full disk
    record_file = tmp_path / "started.json"
    proc = subprocess.run([sys.executable, "-c", PENDING, str(record_file), *THOUSAND, f"hydra.sweep.dir={sweep}",
                           "-m"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert record_file.exists(), proc.stderr[-3000:]
    assert json.loads(record_file.read_text()) == [17, 503, 998]
