"""Writing and holding files safely: atomic replacement, JSON records, and the output-folder lock.

Every file the harness writes that someone may read while it is being written (metrics, run records,
checkpoints, cached data, reports) goes through `atomic_write`: a temporary file in the same folder, then a
rename, so a reader or a killed process never sees half a file, and the temporary file never outlives an error.
"""
from __future__ import annotations

import fcntl
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.store.layout import LOCK_FILE

PARTIAL_SUFFIX = ".tmp"      # temporary files of atomic writes: `.<name>.<random>.tmp`


class FolderBusy(RuntimeError):
    """Another process holds the folder's lock; the message names it."""


def atomic_write(path: Path, write: Callable[[str], None], mode: int = 0o644) -> None:
    """Call `write(temporary_path)`, then move the result over `path` in one step."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=PARTIAL_SUFFIX)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, mode)  # mkstemp creates 0600; these files are meant to be read by others
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: Path, text: str) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    atomic_write(path, write)


def write_json(path: Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def write_fields(path: Path, values: dict[str, Any], fields: dict[str, str]) -> None:
    """A JSON record whose keys must all be named in `fields` (a file's documented fields): a writer that misspells
    one fails here, not a reader later."""
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{Path(path).name} has no field {unknown[0]!r}; its fields are {', '.join(fields)}")
    write_json(path, values)


class DamagedFile(ValueError):
    """A file that exists but cannot be read (truncated, garbage); the message names it and says why."""


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file's content, or None when there is no such file; raises DamagedFile when it cannot be read."""
    try:
        content = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError) as err:
        raise DamagedFile(f"{path} cannot be read ({type(err).__name__}: {err})") from None
    if not isinstance(content, dict):
        raise DamagedFile(f"{path} cannot be read (it holds a {type(content).__name__}, not a JSON object)")
    return content


def remove_partial_writes(folder: Path) -> None:
    """Temporary files of atomic writes cut short by a kill: never read, removed when the run starts again."""
    for partial in Path(folder).glob(f".*{PARTIAL_SUFFIX}"):
        partial.unlink(missing_ok=True)


def folder_busy(folder: Path) -> bool:
    """Another process holds `folder` (folder_lock) now; nothing is created or changed."""
    try:
        with open(Path(folder) / LOCK_FILE, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except FileNotFoundError:
        return False
    except BlockingIOError:
        return True
    return False


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold `folder` while the block runs; raises FolderBusy when another process holds it.

    The lock is the operating system's (flock), so it goes with the process however that ends: a killed sweep's
    folder can be resumed at once. The holder's pid is written in the lock file for the error message.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise FolderBusy(handle.read().strip() or "unknown") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
