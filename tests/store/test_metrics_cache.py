"""A sweep's metrics cache (harness.store.metrics_cache): the same rows as reading every run's file, read again only
where a file changed, rebuilt when it is damaged, and never needed (a read-only sweep reads its run files)."""
import pandas as pd
import pytest

from harness.assess.sweep import read
from harness.store import metrics_cache, run_files
from harness.store.files import atomic_write
from tests.helpers.sweeps import make_run


@pytest.fixture
def sweep(tmp_path):
    """Four runs, one of them with a column the others lack, one without any epoch."""
    folder = tmp_path / "s"
    make_run(folder, 0, batch_size=8, seed=0)
    make_run(folder, 1, batch_size=8, seed=1, val=(0.4, 0.6))
    make_run(folder, 2, batch_size=64, seed=0, status="failed", val=(), error="boom")
    make_run(folder, 3, batch_size=64, seed=1, tune=(0.5, 0.6, 0.7), tune_fraction=0.1)
    return folder


@pytest.fixture
def reads(monkeypatch):
    """The metrics files each read actually opened."""
    opened = []
    original = metrics_cache.read_metrics_table

    def counting(paths):
        opened.append(sorted(path.parent.name for path in paths))
        return original(paths)

    monkeypatch.setattr(metrics_cache, "read_metrics_table", counting)
    return opened


def _uncached(sweep):
    paths = sorted(sweep.glob("*/metrics.parquet"), key=lambda path: int(path.parent.name))
    frame, rows, _ = run_files.read_metrics(paths)
    return frame, rows, paths


def test_the_cached_rows_are_the_rows_of_the_run_files_and_only_changed_files_are_read_again(sweep, reads):
    expected, expected_rows, paths = _uncached(sweep)
    first, rows, unreadable = metrics_cache.read_sweep_metrics(sweep, paths)
    assert (sweep / metrics_cache.CACHE_FILE).exists() and reads == [["0", "1", "3"]] and not unreadable
    second, again, _ = metrics_cache.read_sweep_metrics(sweep, paths)
    assert reads == [["0", "1", "3"]]  # nothing changed: nothing read but the cache
    for frame, owners in ((first, rows), (second, again)):
        pd.testing.assert_frame_equal(frame, expected)
        assert owners.tolist() == expected_rows.tolist()
    make_run(sweep, 4, batch_size=64, seed=2, val=(0.3,))  # a new run, and run 1 trains another epoch
    run_1 = pd.read_parquet(paths[1])
    run_1 = pd.concat([run_1, run_1.tail(1).assign(epoch=3, val_acc=0.65)], ignore_index=True)
    atomic_write(paths[1], lambda tmp: run_1.to_parquet(tmp, index=False))
    expected, expected_rows, paths = _uncached(sweep)
    third, rows, _ = metrics_cache.read_sweep_metrics(sweep, paths)
    assert reads[-1] == ["1", "4"]
    pd.testing.assert_frame_equal(third, expected)
    assert rows.tolist() == expected_rows.tolist() and third["val_acc"].iloc[5] == 0.65


def test_a_sweep_reads_the_same_with_its_cache_without_it_and_with_it_damaged(sweep, reads):
    cold = read(sweep).epochs
    warm = read(sweep).epochs
    pd.testing.assert_frame_equal(warm, cold)
    (sweep / metrics_cache.CACHE_FILE).write_bytes(b"PAR1 not a parquet file PAR1")
    rebuilt = read(sweep).epochs
    pd.testing.assert_frame_equal(rebuilt, cold)
    assert len(reads) == 2 and reads[0] == reads[1]  # the damaged cache was read around, and written again
    read(sweep).epochs
    assert len(reads) == 2


def test_a_sweep_whose_cache_cannot_be_written_is_read_from_its_run_files(sweep, monkeypatch):
    """A read-only copy of a sweep (here, every write of the cache refused): the rows come from the run files."""
    expected = read(sweep).epochs
    (sweep / metrics_cache.CACHE_FILE).unlink()

    def read_only(path, write, mode=0o644):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(metrics_cache, "atomic_write", read_only)
    pd.testing.assert_frame_equal(read(sweep).epochs, expected)
    assert not (sweep / metrics_cache.CACHE_FILE).exists()
