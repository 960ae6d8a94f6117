"""Checks on a command's whole list of runs before any starts (harness.launch.preflight): GPUs, and folders to resume."""
import json

import pytest

from harness.config.schema import ConfigError
from harness.launch.cli import plan_command
from harness.launch.preflight import check_devices, check_existing_runs
from harness.store.layout import RUN_FILE
from harness.store.run_files import recorded_config


def test_device_check_before_anything_runs(compose):
    with pytest.raises(ConfigError, match=r"gpus=2 .*at most 0 \(GPUs visible here\)"):
        check_devices([compose("gpus=2")], gpu_ids=[])
    check_devices([compose("gpus=2", "simulate_devices=true")], gpu_ids=[])
    check_devices([compose("gpus=2")], gpu_ids=[0, 1])
    with pytest.raises(ConfigError, match=r"devices=\[0, 2\]"):
        check_devices([compose("gpus=2", "devices=[0,2]")], gpu_ids=[0, 1])
    check_devices([compose("gpus=2", "devices=[0,2]")], gpu_ids=[0, 2])
    check_devices([compose("gpus=2", "devices=[0,2]")], gpu_ids=[4, 6], ids_applied=True)  # under the launcher
    with pytest.raises(ConfigError, match="only when no GPU is visible"):
        check_devices([compose("gpus=4", "simulate_devices=true")], gpu_ids=[0])


def test_every_run_of_the_command_is_checked_not_only_the_first(compose):
    with pytest.raises(ConfigError, match=r"gpus=2 .*at most 1"):
        check_devices([compose("gpus=1"), compose("gpus=2")], gpu_ids=[3])


def _write_runs(folder, run_configs, overrides):
    for num, (run_cfg, over) in enumerate(zip(run_configs, overrides)):
        (folder / str(num)).mkdir(parents=True)
        record = {"status": "completed", "config": recorded_config(run_cfg.identity()), "overrides": over}
        (folder / str(num) / RUN_FILE).write_text(json.dumps(record))


def test_a_folder_is_resumed_whatever_the_order_of_the_overrides(tmp_path):
    """The same run is the same resolved config; another value is another run, and refused."""
    sweep = tmp_path / "sweep"
    first = ["batch_size=8,32", "seed=0", "epochs=6", "dataset.num_samples=2000", f"hydra.sweep.dir={sweep}"]
    run_configs = plan_command(first, multirun=True).run_configs
    _write_runs(sweep, run_configs, [[f"batch_size={c.train.batch_size}", "epochs=6", "dataset.num_samples=2000"]
                                     for c in run_configs])
    assert len(plan_command([*reversed(first)], multirun=True).run_configs) == 2
    with pytest.raises(ConfigError, match="ran 'batch_size=8 epochs=6 .*' but this command's run there is"):
        plan_command(["batch_size=8,32", "seed=0", "epochs=7", "dataset.num_samples=2000", f"hydra.sweep.dir={sweep}"],
                     multirun=True)


def test_existing_runs_are_compared_run_by_run_in_a_sweep_and_as_the_folder_of_a_single_run(compose, tmp_path):
    eight, thirty_two = compose("batch_size=8"), compose("batch_size=32")
    sweep = tmp_path / "sweep"
    _write_runs(sweep, [eight], [["batch_size=8"]])  # job 1 has not started: nothing to compare
    check_existing_runs([["batch_size=8"], ["batch_size=32"]], [eight, thirty_two], sweep, multirun=True)
    with pytest.raises(ConfigError) as swapped:  # the same runs in another order are other runs
        check_existing_runs([["batch_size=32"], ["batch_size=8"]], [thirty_two, eight], sweep, multirun=True)
    assert str(swapped.value).startswith(f"hydra.sweep.dir='{sweep}' is not allowed: a new folder or one holding "
                                         "this same command's runs;")
    assert f"{sweep / '0'} ran 'batch_size=8' but this command's run there is 'batch_size=32'" in str(swapped.value)

    single = tmp_path / "single"
    single.mkdir()
    (single / RUN_FILE).write_text(json.dumps({"config": recorded_config(eight.identity()), "overrides": []}))
    check_existing_runs([["batch_size=8"]], [eight], single, multirun=False)
    with pytest.raises(ConfigError, match=r"^hydra.run.dir=.* ran '' but this command's run there is 'batch_size=32'"):
        check_existing_runs([["batch_size=32"]], [thirty_two], single, multirun=False)
    check_existing_runs([["batch_size=32"]], [thirty_two], tmp_path / "new", multirun=False)  # nothing there


def test_a_resume_reads_no_run_json_of_a_job_its_sweep_json_planned_the_same(tmp_path, monkeypatch):
    """A sweep of thousands resumes at once: the jobs whose config fingerprint sweep.json holds were this
    command's before, so their run.json files are not read; a job planned otherwise is compared as ever, and so is
    every job of a sweep.json without fingerprints (an older harness's)."""
    from harness.launch import preflight
    from harness.store import sweep_file
    from harness.store.files import write_json

    sweep = tmp_path / "sweep"
    command = ["batch_size=8,16,32,64", "lr=0.001,0.002,0.005", "seed=0,1,2", f"hydra.sweep.dir={sweep}"]
    plan = plan_command(command, multirun=True)
    write_json(sweep / "sweep.json", plan.sweep_record())
    _write_runs(sweep, plan.run_configs, plan.jobs)
    read = []
    original = preflight.read_json
    for module in (preflight, sweep_file):  # a run.json, and the sweep's plan
        monkeypatch.setattr(module, "read_json", lambda path: read.append(path) or original(path))
    assert len(plan_command(command, multirun=True).jobs) == 36 and read == [sweep / "sweep.json"]
    read.clear()
    with pytest.raises(ConfigError, match=r"ran '.*batch_size=8.*' but this command's run there is"):
        plan_command([*command[:-1], "epochs=3", f"hydra.sweep.dir={sweep}"], multirun=True)
    assert sweep / "0" / RUN_FILE in read  # planned otherwise: its run.json is read and compared
    record = plan.sweep_record()
    write_json(sweep / "sweep.json", {"jobs": [{k: v for k, v in job.items() if k != "config"}
                                               for job in record["jobs"]]})
    read.clear()
    plan_command(command, multirun=True)
    assert len(read) == 1 + 36  # sweep.json, then every run.json
