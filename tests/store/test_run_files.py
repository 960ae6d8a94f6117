"""A run's files (harness.store.run_files): config columns, metrics.parquet rewritten each epoch, run.json, the result."""
import json
import math

import pandas as pd
import pytest

from harness.store import layout, run_files
from tests.helpers.sweeps import make_run


def test_config_columns_name_the_configured_lr_base_lr_and_write_devices_as_a_string(compose):
    flat = compose("gpus=2", "devices=[0,2]", "lr=0.05").flat()
    columns = run_files.config_columns(flat)
    assert "lr" not in columns and list(columns)[-1] == "base_lr" and columns["base_lr"] == 0.05
    assert columns["devices"] == "0,2" and flat["devices"] == [0, 2]  # the config itself is left alone
    assert {k: v for k, v in columns.items() if k not in ("base_lr", "devices")} == {
        k: v for k, v in flat.items() if k not in ("lr", "devices")}
    assert run_files.config_columns(compose().flat())["devices"] is None
    assert run_files.config_columns({"devices": (1,)}) == {"devices": "1"}  # a tuple too; no lr, no base_lr


def test_recorded_config_is_the_config_in_json_types(compose):
    flat = {**compose().flat(), "devices": (0, 2)}
    recorded = run_files.recorded_config(flat)
    assert recorded["devices"] == [0, 2] and recorded == json.loads(json.dumps(flat))


def _row(epoch, value):
    return {"run_id": "s/0", "epoch": epoch, "val_acc": value}


def test_metrics_table_rewrites_the_parquet_after_each_row(tmp_path):
    table = run_files.MetricsTable(tmp_path)
    table.append(_row(1, 0.5))
    assert pd.read_parquet(tmp_path / layout.METRICS_FILE).to_dict("records") == [_row(1, 0.5)]
    table.append(_row(2, 0.6))
    assert pd.read_parquet(tmp_path / layout.METRICS_FILE).to_dict("records") == [_row(1, 0.5), _row(2, 0.6)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [layout.METRICS_FILE]  # no temporary file left


def test_a_resumed_metrics_table_keeps_the_earlier_epochs_and_replaces_the_rest(tmp_path):
    table = run_files.MetricsTable(tmp_path)
    for epoch, value in ((1, 0.5), (2, 0.6), (3, 0.7)):  # epoch 3's row was written, its checkpoint was not
        table.append(_row(epoch, value))
    resumed = run_files.MetricsTable(tmp_path, keep_epochs=2)
    assert resumed.rows == [_row(1, 0.5), _row(2, 0.6)]
    resumed.append(_row(3, 0.75))
    assert pd.read_parquet(tmp_path / layout.METRICS_FILE)["val_acc"].tolist() == [0.5, 0.6, 0.75]
    fresh = run_files.MetricsTable(tmp_path)  # a new run (keep_epochs 0) starts empty and replaces the file
    assert fresh.rows == []
    fresh.append(_row(1, 0.1))
    assert pd.read_parquet(tmp_path / layout.METRICS_FILE)["val_acc"].tolist() == [0.1]


def _read(path):
    return json.loads(path.read_text())


def test_run_record_says_running_from_the_start_then_the_outcome(tmp_path):
    record = run_files.RunRecord(tmp_path, "s/0", {"batch_size": 8}, ["batch_size=8"])
    started = _read(tmp_path / layout.RUN_FILE)
    assert started["status"] == "running" and started["finished_at"] is None and started["error"] is None
    assert started["run_id"] == "s/0" and started["config"] == {"batch_size": 8}
    assert started["overrides"] == ["batch_size=8"] and started["epochs_completed"] == 0
    assert started["resumed_from_epoch"] is None and "resumed_at" not in started
    record.update(epochs_completed=2)
    record.set_environment(replicas=1)
    assert _read(tmp_path / layout.RUN_FILE)["epochs_completed"] == 2
    record.finish("completed")
    done = _read(tmp_path / layout.RUN_FILE)
    assert done["status"] == "completed" and done["finished_at"] >= done["started_at"] and done["error"] is None
    assert done["environment"]["replicas"] == 1 and done["environment"]["python"]
    assert done["peak_memory_mb"] > 0


def test_run_record_of_a_failure_holds_the_error_type_message_and_traceback(tmp_path):
    def load_the_data():
        raise OSError("disk on fire")

    record = run_files.RunRecord(tmp_path, "s/0", {}, [])
    try:
        load_the_data()
    except OSError as err:
        record.finish("failed", err)
    failed = _read(tmp_path / layout.RUN_FILE)
    assert failed["status"] == "failed" and failed["finished_at"]
    assert failed["error"]["type"] == "OSError" and failed["error"]["message"] == "disk on fire"
    assert failed["error"]["traceback"].startswith("Traceback (most recent call last)")
    assert "in load_the_data" in failed["error"]["traceback"]
    with pytest.raises(ValueError, match="status must be one of"):
        record.finish("exploded")


def test_a_resumed_run_record_keeps_its_start_and_says_when_it_resumed(tmp_path):
    previous = {"started_at": "2026-01-05T10:00:00+00:00", "status": "interrupted"}
    run_files.RunRecord(tmp_path, "s/0", {}, [], resumed_from_epoch=3, previous=previous)
    resumed = _read(tmp_path / layout.RUN_FILE)
    assert resumed["started_at"] == previous["started_at"] and resumed["resumed_at"] > previous["started_at"]
    assert resumed["resumed_from_epoch"] == 3 and resumed["epochs_completed"] == 3


@pytest.mark.parametrize("status,result", [("completed", 0.8), ("diverged", 0.8), ("failed", None),
                                           ("interrupted", None), ("running", None)])
def test_run_result_is_the_final_val_acc_of_a_finished_run_only(tmp_path, status, result):
    run_dir = make_run(tmp_path / "s", 0, status=status, val=(0.5, 0.7, 0.8))
    assert run_files.run_result(run_dir) == result
    assert run_files.final_val_acc(run_dir) == 0.8


def test_without_metrics_the_final_val_acc_is_nan_and_a_missing_run_has_no_result(tmp_path):
    run_dir = make_run(tmp_path / "s", 0, status="failed", val=(), error="disk on fire")
    assert run_files.run_result(run_dir) is None and math.isnan(run_files.final_val_acc(run_dir))
    assert run_files.run_result(tmp_path / "nowhere") is None
    diverged = make_run(tmp_path / "s", 1, status="diverged", val=())  # diverged in its first epoch
    assert math.isnan(run_files.run_result(diverged))


def test_metrics_files_are_read_in_one_pass_and_a_broken_one_is_named_not_fatal(tmp_path):
    """read_metrics: every file's rows in the order of the paths, a column one file lacks empty in its rows; a file
    whose tail looks whole but whose pages are garbage is named unreadable and the others are still read."""
    import numpy as np

    from harness.store.run_files import read_metrics

    paths = []
    for n, extra in enumerate([{}, {"noise_scale": [5.0, 6.0]}, {}]):
        path = tmp_path / str(n) / "metrics.parquet"
        path.parent.mkdir()
        pd.DataFrame({"run_id": [f"s/{n}"] * 2, "epoch": [1, 2], "val_acc": [0.1 * n, 0.2 * n], **extra}).to_parquet(
            path, index=False)
        paths.append(path)
    frame, rows, unreadable = read_metrics(paths)
    assert frame["run_id"].tolist() == ["s/0", "s/0", "s/1", "s/1", "s/2", "s/2"] and rows.tolist() == [0, 0, 1, 1, 2, 2]
    assert frame["noise_scale"].isna().tolist() == [True, True, False, False, True, True]
    broken = bytearray(paths[1].read_bytes())
    broken[4:40] = b"\0" * 36  # the pages, not the footer: the last 8 bytes still say parquet
    paths[1].write_bytes(bytes(broken))
    frame, rows, unreadable = read_metrics(paths)
    assert list(unreadable) == [1] and "cannot be read" in unreadable[1]
    assert np.unique(rows).tolist() == [0, 2] and set(frame["run_id"]) == {"s/0", "s/2"}
