"""`python -m harness.results`: one row per run across sweeps, equal to the runs' own files."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.report import results
from tests.helpers.sweeps import add_probes, batch_sweep, make_run


@pytest.fixture
def two_sweeps(tmp_path):
    """sweeps/ with two sweeps: four completed runs with probes, then a completed, a failed and a running run."""
    first = add_probes(batch_sweep(tmp_path / "sweeps" / "2026-01-05_10-00-00", {8: [0.9, 0.91], 128: [0.8, 0.79]}))
    second = batch_sweep(tmp_path / "sweeps" / "2026-01-06_09-30-00", {32: [0.88]}, shuffle=False)
    make_run(second, 1, status="failed", val=(), error="disk on fire", batch_size=64)
    make_run(second, 2, status="running", val=(0.4,), finished=False, batch_size=16)
    return first, second


def run_folders(*sweeps: Path) -> list[Path]:
    runs = [path.parent for sweep in sweeps for path in sweep.glob("*/run.json")]
    return sorted(runs, key=lambda run: (sweeps.index(run.parent), int(run.name)))


def assert_rows_are_the_runs_files(table: pd.DataFrame, folders: list[Path]) -> None:
    """Row i is run folder i: its run.json status, its last metrics row, the gap, its probes.json."""
    assert len(table) == len(folders)
    for (_, row), folder in zip(table.iterrows(), folders):
        record = json.loads((folder / "run.json").read_text())
        assert (row["sweep"], row["job"], row["run_id"]) == (folder.parent.name, folder.name, record["run_id"])
        assert row["status"] == record["status"] and row["batch_size"] == record["config"]["batch_size"]
        metrics = folder / "metrics.parquet"
        if metrics.exists():
            last = pd.read_parquet(metrics).iloc[-1]
            for column, value in last.items():
                assert row[column] == value or (pd.isna(value) and pd.isna(row[column])), column
            assert row["gap"] == pytest.approx(last["train_eval_acc"] - last["val_acc"])
        else:
            assert pd.isna(row["epoch"]) and pd.isna(row["val_acc"]) and pd.isna(row["gap"])
        probes = folder / "probes.json"
        for key, column in results.PROBE_COLUMNS.items():
            expected = json.loads(probes.read_text())[key] if probes.exists() else None
            assert row[column] == expected or (expected is None and pd.isna(row[column])), column


def test_one_row_per_run_across_two_sweeps_equal_to_its_last_metrics_row_and_probes(two_sweeps):
    table = results.results(list(two_sweeps))
    assert_rows_are_the_runs_files(table, run_folders(*two_sweeps))
    assert table["status"].tolist() == ["completed"] * 5 + ["failed", "running"]
    assert table.loc[0, "hessian_top_eigenvalue"] == 20.0 and table.loc[5, "error_message"] == "disk on fire"
    assert table["best_val_acc"].tolist()[:4] == [0.9, 0.91, 0.8, 0.79] and table.loc[0, "best_epoch"] == 3
    assert list(table.columns[:5]) == ["sweep", "run_id", "job", "status", "batch_size"]


def missing_as_none(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(object).where(frame.notna(), None)


def as_text(column: pd.Series) -> list[str]:
    return ["" if pd.isna(value) else str(value) for value in column]


def test_csv_and_parquet_round_trip(two_sweeps, tmp_path, capsys):
    table = results.results(list(two_sweeps))
    sweeps = [str(path) for path in two_sweeps]
    assert results.main([*sweeps, "--out", str(tmp_path / "out" / "results.parquet")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "results.parquet")
    # the same values (a column of strings and None reads back as pandas' string type, None as its missing value)
    pd.testing.assert_frame_equal(missing_as_none(pd.read_parquet(tmp_path / "out" / "results.parquet")),
                                  missing_as_none(table))

    assert results.main([*sweeps, "--out", str(tmp_path / "results.csv")]) == 0
    from_csv = pd.read_csv(tmp_path / "results.csv", dtype={"job": str})
    assert list(from_csv.columns) == list(table.columns) and len(from_csv) == len(table)
    for column in table.columns:
        if pd.api.types.is_numeric_dtype(table[column]) and not pd.api.types.is_bool_dtype(table[column]):
            np.testing.assert_allclose(from_csv[column].astype(float), table[column].astype(float), err_msg=column)
        else:
            assert as_text(from_csv[column]) == as_text(table[column]), column


def test_the_command_reads_every_sweep_under_sweeps_by_default_and_never_loads_tensorflow(two_sweeps, tmp_path):
    code = ("import sys; from harness.report import results; rc = results.main(); "
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    header = lines[0].split()
    assert header[:3] == ["sweep", "job", "status"] and {"batch_size", "shuffle", "val_acc", "gap"} <= set(header)
    assert "optimizer" not in header  # the same in every run: only the keys that tell runs apart are printed
    assert len(lines) == 1 + 7 and lines[1].split()[:4] == ["2026-01-05_10-00-00", "0", "completed", "8"]
    assert lines[6].split()[:4] == ["2026-01-06_09-30-00", "1", "failed", "64"]
    assert proc.stderr.strip() == "7 run(s) in 2 sweep(s); every column with --out results.csv"

    parent = subprocess.run([sys.executable, "-m", "harness.results", str(tmp_path / "sweeps")], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert parent.returncode == 0 and parent.stdout == proc.stdout  # a folder of sweeps is every sweep in it


@pytest.mark.parametrize("args, named", [
    (["nowhere"], "sweep_dir='nowhere' is not a folder"),
    (["sweeps/2026-01-05_10-00-00/0/run.json"], "sweep_dir='sweeps/2026-01-05_10-00-00/0/run.json' is not a folder"),
    (["empty"], "sweep_dir='empty': no sweep found"),
    (["sweeps", "--out", "results.xlsx"], "--out='results.xlsx'"),
])
def test_bad_input_is_one_line_naming_the_argument_and_exit_2(two_sweeps, tmp_path, args, named):
    (tmp_path / "empty").mkdir()
    proc = subprocess.run([sys.executable, "-m", "harness.results", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and named in proc.stderr, proc.stderr


def test_no_sweeps_folder_is_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness.results"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "harness.results: error: sweep_dir='sweeps' (the default) is not a folder"


def test_a_sweep_where_no_run_finished_an_epoch_still_has_its_rows(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, status="failed", val=(), error="out of memory", batch_size=4096)
    table = results.results([sweep])
    assert table.loc[0, "status"] == "failed" and pd.isna(table.loc[0, "val_acc"]) and pd.isna(table.loc[0, "gap"])
    assert results.printable(table, ["batch_size"]).splitlines()[1].split() == ["s", "0", "failed"]


@pytest.mark.slow
def test_a_real_sweep_s_table_is_its_runs_files(smoke_sweep):
    cwd, _ = smoke_sweep
    sweep = cwd / "sweeps" / "smoke"
    table = results.results([sweep])
    assert_rows_are_the_runs_files(table, run_folders(sweep))
    assert table["batch_size"].tolist() == [16, 64] and table["hessian_top_eigenvalue"].notna().all()


def test_a_ramps_row_is_its_last_epochs_phase_and_its_schedule_can_be_run_again(tmp_path):
    """results.csv gave a ramp its readings' label (32→128→512 (after epochs 1, 2), without the phases' lr_factor)
    and its first phase's global batch beside its last phase's steps_per_epoch and peak_lr."""
    sweep = tmp_path / "sweep"
    make_run(sweep, 0, batch_size=32)
    run = make_run(sweep, 1, batch_size=32, seed=1)
    record = json.loads((run / "run.json").read_text())
    record["config"]["batch_schedule"] = [[0, 32], [1, 128, 1.5], [2, 512, 2.0]]
    (run / "run.json").write_text(json.dumps(record))
    frame = pd.read_parquet(run / "metrics.parquet")
    frame["batch_schedule"] = "0:32,1:128:1.5,2:512:2.0"
    frame["global_batch_size"] = frame["per_replica_batch_size"] = [32, 128, 512]
    frame["steps_per_epoch"] = [125, 32, 8]
    frame.to_parquet(run / "metrics.parquet")
    table = results.sweep_results(sweep).set_index("run_id")
    ramp = table.loc["sweep/1"]
    assert ramp["batch_schedule"] == "[[0,32],[1,128,1.5],[2,512,2]]"
    assert (ramp["global_batch_size"], ramp["steps_per_epoch"]) == (512, 8)  # one phase's, the last epoch's
    assert table.loc["sweep/0", "batch_schedule"] == "none" and table.loc["sweep/0", "global_batch_size"] == 32
