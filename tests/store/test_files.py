"""Safe file writing and the output-folder lock (harness.store.files)."""
import os
import signal
import stat
import subprocess
import sys

import pytest

from harness.store import files, layout


def test_atomic_write_replaces_the_file_in_one_step_readable_by_others(tmp_path):
    path = tmp_path / "deep" / "er" / "out.txt"  # folders are made as needed
    files.write_text(path, "first")
    files.write_text(path, "second")
    assert path.read_text() == "second"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["out.txt"]  # no temporary file left


def test_a_failed_write_keeps_the_old_content_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "metrics.parquet"
    files.write_text(path, "complete epoch 2")
    seen = []

    def half_then_fail(tmp: str) -> None:
        seen.append(tmp)
        with open(tmp, "w") as f:
            f.write("half of epoch 3")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        files.atomic_write(path, half_then_fail)
    assert path.read_text() == "complete epoch 2"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.parquet"]
    [tmp] = seen  # the temporary file was in the same folder (so the rename is atomic), hidden, .tmp
    assert os.path.dirname(tmp) == str(tmp_path)
    assert os.path.basename(tmp).startswith(".metrics.parquet.") and tmp.endswith(files.PARTIAL_SUFFIX)


def test_json_round_trip_and_a_missing_file_reads_as_none(tmp_path):
    files.write_json(tmp_path / "run.json", {"status": "completed", "devices": (0, 2), "path": tmp_path})
    assert files.read_json(tmp_path / "run.json") == {"status": "completed", "devices": [0, 2],
                                                      "path": str(tmp_path)}
    assert (tmp_path / "run.json").read_text().endswith("}\n")
    assert files.read_json(tmp_path / "nothing.json") is None


def test_remove_partial_writes_removes_only_temporary_files_of_atomic_writes(tmp_path):
    partial = [".metrics.parquet.abc123.tmp", ".run.json.x.tmp", ".checkpoint.npz.q1w2.tmp"]
    kept = ["metrics.parquet", "run.json", "notes.tmp", ".hidden", "train.log"]
    for name in partial + kept:
        (tmp_path / name).write_text("x")
    files.remove_partial_writes(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept)


HOLD = """
import sys, time
from harness.store.files import folder_lock
with folder_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""

TRY = """
import sys
from harness.store.files import FolderBusy, folder_lock
try:
    with folder_lock(sys.argv[1]):
        print("acquired")
except FolderBusy as busy:
    print("busy", busy)
"""


def _try_in_another_process(folder) -> str:
    proc = subprocess.run([sys.executable, "-c", TRY, str(folder)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_the_folder_lock_refuses_a_second_holder_and_names_the_first(tmp_path):
    folder = tmp_path / "sweep"
    with files.folder_lock(folder):
        assert (folder / layout.LOCK_FILE).read_text() == f"{os.getpid()}\n"
        assert _try_in_another_process(folder) == f"busy {os.getpid()}"
        with pytest.raises(files.FolderBusy, match=f"^{os.getpid()}$"):  # a second open file, same process
            with files.folder_lock(folder):
                pass
    assert _try_in_another_process(folder) == "acquired"  # released when the block ends


def test_the_lock_of_a_killed_holder_is_free_at_once(tmp_path):
    folder = tmp_path / "sweep"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(files.FolderBusy) as busy:
            with files.folder_lock(folder):
                pass
        assert str(busy.value) == str(holder.pid)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    with files.folder_lock(folder):  # kill -9 leaves the file, not the lock
        assert (folder / layout.LOCK_FILE).read_text() == f"{os.getpid()}\n"


def test_a_record_with_a_field_its_file_does_not_document_is_refused_and_nothing_is_written(tmp_path):
    from harness.store import probes_file, target_file

    with pytest.raises(ValueError, match="target.json has no field 'steps_to_targte'"):
        target_file.write(tmp_path, {"steps_to_targte": 10})
    with pytest.raises(ValueError, match="probes.json has no field 'sharpnes'"):
        probes_file.write(tmp_path, {"sharpnes": 1.0})
    assert list(tmp_path.iterdir()) == []
    target_file.write(tmp_path, {"steps_to_target": 10, "samples_to_target": 80})
    assert target_file.read(tmp_path) == {"steps_to_target": 10, "samples_to_target": 80}
