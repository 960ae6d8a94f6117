"""One table of every run's final metrics and config, across sweeps: `python -m harness.results [SWEEP ...]`.

One row per run: its sweep, run_id, status, every config key, its last epoch's metrics row (with the gap
train_eval_acc - val_acc and the best epoch's val_acc), its probes.json values, and its timing. Printed as a table of
the columns that tell runs apart, or written whole with `--out results.csv` / `--out results.parquet`. Files only:
no TensorFlow.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from harness.assess.analysis import RUN_COLUMNS
from harness.assess.sweep import Sweep
from harness.assess.sweep import read as read_sweep
from harness.store import layout, probes_file, target_file
from harness.store.files import DamagedFile
from harness.store.layout import RUN_FILE
from harness.studies import registry

FINAL_METRICS = ["epoch", "step", "train_loss", "train_acc", "train_eval_loss", "train_eval_acc", "val_loss", "val_acc",
                 "gap", "best_val_acc", "best_epoch"]
# probes.json key -> column; every table has these columns, empty for runs without the file
# probes.json field -> its column in the table
PROBE_COLUMNS = {**{field: field for field in (*probes_file.MEASURES, "probe_loss", *probes_file.CONVERGED)},
                 "error": "probe_error"}
PROBE_TYPES = {column: "boolean" if column.endswith("_converged") else "object" if column == "probe_error" else float
               for column in PROBE_COLUMNS.values()}  # one type per column, whichever runs have the file
TARGET_COLUMNS = target_file.COLUMNS  # target.json's scalars (target_tune_acc runs), empty for other runs
PRINTED_METRICS = ["epoch", "train_acc", "train_eval_acc", "val_acc", "gap", "val_loss", "hessian_top_eigenvalue",
                   "sharpness", "steps_to_target", "samples_to_target"]
OUT_SUFFIXES = (".csv", ".parquet")


def sweep_results(sweep: Sweep | Path) -> pd.DataFrame:
    """One row per run of the sweep (see the module's docstring; a folder is read first); raises FileNotFoundError
    without runs."""
    sweep = sweep if isinstance(sweep, Sweep) else read_sweep(sweep)
    epochs = sweep.epochs
    order = epochs.drop_duplicates("run_id")["run_id"]
    last = epochs.sort_values("epoch", kind="stable").groupby("run_id", sort=False).tail(1).set_index("run_id")
    table = last.loc[order].reset_index()
    for column in ("epoch", "step", "train_loss", "train_acc", "train_eval_loss", "train_eval_acc", "val_loss",
                   "val_acc"):  # a sweep where no run finished an epoch has none of them
        if column not in table.columns:
            table[column] = float("nan")
    table["gap"] = table["train_eval_acc"] - table["val_acc"]
    table = _ramps_as_run(table, sweep)
    table = table.merge(_best_epochs(epochs), on="run_id", how="left")
    probes = pd.DataFrame([_probes(sweep, job) for job in table["job"]], index=table.index).astype(PROBE_TYPES)
    targets = pd.DataFrame([_target(sweep, job) for job in table["job"]], index=table.index,
                           columns=list(TARGET_COLUMNS)).astype(float)
    table = pd.concat([table, probes, targets], axis=1)
    table.insert(0, "sweep", sweep.folder.name)
    study = registry.of_sweep(sweep)
    arm = []  # a study's own columns after the job (+study=diagnose's arm; recover's arm and round)
    for column, values in (study.results_columns(sweep) if study is not None else {}).items():
        mapped = table["job"].map(lambda job: values.get(str(job)))
        whole = values and all(isinstance(v, int) and not isinstance(v, bool) for v in values.values())
        table.insert(3 + len(arm), column, mapped.astype("Int64") if whole else mapped)  # a round: 1, 2, ...
        arm.append(column)
    keys = [k for k in sweep.keys if k in table.columns]
    first = ["sweep", "run_id", "job", *arm, "status", *keys, *[c for c in FINAL_METRICS if c in table.columns]]
    last_columns = [*PROBE_COLUMNS.values(), *TARGET_COLUMNS, *[c for c in RUN_COLUMNS if c not in first]]
    middle = [c for c in table.columns if c not in first and c not in last_columns]
    return table[[*first, *middle, *last_columns]]


def _ramps_as_run(table: pd.DataFrame, sweep: Sweep) -> pd.DataFrame:
    """A ramp's row as its last epoch ran: its global batch that epoch's phase's (beside that phase's
    steps_per_epoch and peak_lr; the readings stand a ramp at its first phase's batch on their axis), and its
    batch_schedule as run.json's config holds it, in the form the command line takes (its lr_factors kept), so that
    the row can be run again (the readings' label, 32→128 (after epoch 2), says less)."""
    if "batch_schedule" not in table.columns:
        return table
    configured = {record.get("run_id"): (record.get("config") or {}).get("batch_schedule") for record in sweep.records}
    phases = table["run_id"].map(configured)
    ramps = phases.notna() & (table["batch_schedule"] != "none")
    if not ramps.any():
        return table
    table = table.copy()
    table["batch_schedule"] = table["batch_schedule"].astype(object)
    table.loc[ramps, "batch_schedule"] = phases[ramps].map(
        lambda found: "[" + ",".join("[" + ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in phase)
                                     + "]" for phase in found) + "]")
    if {"per_replica_batch_size", "replicas", "global_batch_size"} <= set(table.columns):
        table.loc[ramps, "global_batch_size"] = table.loc[ramps, "per_replica_batch_size"] * table.loc[ramps,
                                                                                                      "replicas"]
    return table


def _best_epochs(epochs: pd.DataFrame) -> pd.DataFrame:
    """run_id, best_val_acc and best_epoch (the first epoch with it) of every run with a validated epoch."""
    if "val_acc" not in epochs.columns:
        return pd.DataFrame(columns=["run_id", "best_val_acc", "best_epoch"])
    measured = epochs[epochs["val_acc"].notna()].sort_values(["run_id", "epoch"], kind="stable")
    best = measured.loc[measured.groupby("run_id", sort=False)["val_acc"].idxmax()]
    return best[["run_id", "val_acc", "epoch"]].rename(columns={"val_acc": "best_val_acc", "epoch": "best_epoch"})


def _probes(sweep: Sweep, job: str) -> dict:
    """The run's probes.json values by column; empty values without the file (probes=false, or a run that did not
    finish) and a note in `probe_error` when it cannot be read."""
    values = dict.fromkeys(PROBE_COLUMNS.values())
    try:
        found = sweep.probes(job)
    except DamagedFile as err:
        return {**values, "probe_error": str(err)}
    for key, column in PROBE_COLUMNS.items():
        values[column] = (found or {}).get(key)
    return values


def _target(sweep: Sweep, job: str) -> dict:
    """The run's target.json scalars by column; empty without the file (no target_tune_acc, or not finished) or
    when it cannot be read."""
    try:
        found = sweep.target(job) or {}
    except DamagedFile:
        found = {}
    return {column: found.get(column) for column in TARGET_COLUMNS}


def results(sweeps: list[Sweep | Path]) -> pd.DataFrame:
    """The runs of every sweep (each read once; a folder is read first), one table: config keys a sweep lacks are
    empty for its runs."""
    tables = [sweep_results(sweep) for sweep in sweeps]
    studied = list(dict.fromkeys(column for table in tables for column in _study_columns(table)))
    table = pd.concat(tables, ignore_index=True)
    first = ["sweep", "run_id", "job", *studied]
    return table[[*first, *(column for column in table.columns if column not in first)]]


def _study_columns(table: pd.DataFrame) -> list[str]:
    """The columns a sweep's study adds (Study.results_columns): between `job` and `status`."""
    columns = list(table.columns)
    return columns[columns.index("job") + 1:columns.index("status")]


def find_sweeps(folder: Path) -> list[Path]:
    """`folder` itself when it holds runs, else its sub-folders that do (`sweeps/`), by name (their start time)."""
    if layout.is_sweep(folder):
        return [folder]
    return sorted((p for p in folder.iterdir() if p.is_dir() and layout.is_sweep(p)), key=lambda p: p.name)


def printable(table: pd.DataFrame, keys: list[str]) -> str:
    """The columns that tell the runs apart: sweep, job, a study's own (a diagnosis's arm), status, the config
    `keys` whose value differs between runs, the final accuracies, gap and validation loss, and the curvature probes
    when there are any."""
    varied = [k for k in dict.fromkeys(keys) if k in table.columns and table[k].astype(str).nunique() > 1]
    metrics = [c for c in PRINTED_METRICS if table[c].notna().any()]
    shown = table[["sweep", "job", *_study_columns(table), "status", *varied, *metrics]]
    return shown.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:.4g}")


def study_lines(sweeps: list[Sweep]) -> str:
    """What each sweep's study prints under the table (a diagnosis's parts of the drop), '' if none."""
    lines = []
    for sweep in sweeps:
        study = registry.of_sweep(sweep)
        lines += study.results_lines(sweep) if study is not None else []
    return "\n".join(lines)


def _fail(message: str) -> int:
    print(f"harness.results: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.results", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dirs", type=Path, nargs="*",
                        help="sweep folders, or folders of sweeps (default: every sweep under ./sweeps)")
    parser.add_argument("--out", type=Path, help="write the whole table to this .csv or .parquet file")
    args = parser.parse_args(argv)
    if args.out is not None and args.out.suffix not in OUT_SUFFIXES:
        return _fail(f"--out={str(args.out)!r}: the file name must end in .csv or .parquet")
    sweeps = []
    for folder in args.sweep_dirs or [Path("sweeps")]:
        if not folder.is_dir():
            return _fail(f"sweep_dir={str(folder)!r}{'' if args.sweep_dirs else ' (the default)'} is not a folder")
        found = find_sweeps(folder)
        if not found:
            return _fail(f"sweep_dir={str(folder)!r}: no sweep found (no run folder with {RUN_FILE})")
        sweeps += found
    try:  # every sweep read once, for the table, its keys and a diagnosis
        read = [read_sweep(folder) for folder in sweeps]
    except FileNotFoundError as err:  # runs whose files cannot be read, not even their config
        return _fail(str(err))
    return _write(args, read)


def _write(args, sweeps: list[Sweep]) -> int:
    table = results(sweeps)
    if args.out is None:
        print(printable(table, [k for sweep in sweeps for k in sweep.keys]))
        parts = study_lines(sweeps)
        if parts:
            print(parts)
        print(f"{len(table)} run(s) in {len(sweeps)} sweep(s); every column with --out results.csv", file=sys.stderr)
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.suffix == ".csv":
        table.to_csv(args.out, index=False)
    else:
        table.to_parquet(args.out, index=False)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
