"""A sweep's epochs in one file: every run's metrics.parquet rows as last read, kept in the sweep folder
(`.metrics-cache.parquet`) with each file's inode, size and modification time, so that the next report or results table
reads one file and only the runs' files that changed since.

Reading 10,000 runs' metrics files costs about 2.5 ms each (opening and parsing a footer per file, in C++); one
file of their rows costs a fraction of a second. The run files stay the record: the cache is rebuilt from them
whenever it is missing, damaged, from another version, or cannot be written (a read-only copy of a sweep).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.store.files import atomic_write
from harness.store.run_files import read_metrics_table

CACHE_FILE = ".metrics-cache.parquet"
# each row's metrics file (relative to the sweep) and its stat: run files are replaced atomically, so a rewritten
# file has a new inode as well as a new modification time
FILE, INODE, SIZE, MTIME = "__file", "__inode", "__size", "__mtime_ns"
KEYS = (FILE, INODE, SIZE, MTIME)
VERSION = b"1"


def read_sweep_metrics(sweep_dir: Path, paths: list[Path]) -> tuple[pd.DataFrame, np.ndarray, dict[int, str]]:
    """harness.store.run_files.read_metrics for the metrics files of one sweep, through its cache: the rows of a
    file whose inode, size and modification time are those cached come from the cache, the others are read."""
    sweep_dir = Path(sweep_dir)
    names = [os.path.relpath(path, sweep_dir) for path in paths]
    stats = [_stat(path) for path in paths]
    cached = _load(sweep_dir / CACHE_FILE)
    fresh = set()
    if cached is not None:
        held = {}
        for name, *stat in zip(*(cached.column(key).to_pylist() for key in KEYS)):
            held[name] = tuple(stat)
        fresh = {i for i, (name, stat) in enumerate(zip(names, stats)) if stat is not None and held.get(name) == stat}
    stale = [i for i in range(len(paths)) if i not in fresh]
    read, read_rows, unreadable = read_metrics_table([paths[i] for i in stale]) if stale else (pa.table({}), [], {})
    read = read.combine_chunks()  # one chunk per file as read: thousands of tiny chunks to write and take from
    read_rows = np.array([stale[i] for i in read_rows], dtype=np.int64)
    unreadable = {stale[i]: why for i, why in unreadable.items()}
    tables, owners = [], []
    if fresh:
        keep = pc.is_in(cached.column(FILE), value_set=pa.array([names[i] for i in sorted(fresh)]))
        kept = cached.filter(keep)
        index = {name: i for i, name in enumerate(names)}
        tables.append(kept)
        owners.append(np.array([index[name] for name in kept.column(FILE).to_pylist()], dtype=np.int64))
    if read.num_rows:
        tables.append(_keyed(read, read_rows, names, stats))
        owners.append(read_rows)
    if not tables:
        return pd.DataFrame(), np.zeros(0, dtype=np.int64), unreadable
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    rows = np.concatenate(owners)
    if stale:  # something was read: keep this reading for the next
        _save(sweep_dir / CACHE_FILE, table)
    order = np.argsort(rows, kind="stable")  # the order of `paths`, each file's rows in their order
    return table.drop_columns(list(KEYS)).take(order).to_pandas(), rows[order], unreadable


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _keyed(table: pa.Table, rows: np.ndarray, names: list[str], stats: list) -> pa.Table:
    """`table` with each row's file and the file's inode, size and modification time, as the cache keeps them."""
    table = table.append_column(FILE, pa.array([names[i] for i in rows], pa.string()))
    for n, key in enumerate(KEYS[1:]):
        table = table.append_column(key, pa.array([stats[i][n] if stats[i] else -1 for i in rows], pa.int64()))
    return table


def _load(path: Path) -> pa.Table | None:
    """The cache, or None where there is none, or it is damaged or of another version."""
    try:
        table = pq.read_table(path)
    except Exception:  # missing, truncated, foreign: rebuilt from the run files
        return None
    meta = table.schema.metadata or {}
    if meta.get(b"harness.metrics_cache") != VERSION or any(key not in table.column_names for key in KEYS):
        return None
    return table


def _save(path: Path, table: pa.Table) -> None:
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"harness.metrics_cache": VERSION})
    try:
        atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    except OSError:  # a read-only copy of a sweep: read from the run files each time
        pass
