"""command.json, what resuming a command's folder needs: the command's arguments as the user gave them, the working
directory they are relative to (dataset.path, --config-dir, reports/) and the versions that ran it. Written by the
command's first start into its output folder (a sweep's, or a single run's) and never rewritten: a resume, or the
same command again, leaves the first start's record as it was.

    {"format": 1,
     "argv": ["batch_size=8,32,64,128", "-m"],    # after `python -m harness`, as typed
     "cwd": "/home/me/project",                    # where it ran
     "multirun": true,
     "harness_version": "0.1.0", "keras_version": "3.15.0",
     "started_at": "2026-12-03T09:00:00+00:00"}

`python -m harness.resume FOLDER` (harness/resume.py) runs that command into that folder again, from anywhere.
"""
from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from harness.store.files import DamagedFile, read_json, write_json
from harness.store.layout import COMMAND_FILE, is_sweep
from harness.store.run_files import now_iso

FORMAT = 1
FOLDER_KEYS = ("hydra.sweep.dir", "hydra.run.dir")  # where a command writes: a resume names its folder itself


@dataclass(frozen=True)
class Command:
    argv: list[str]
    cwd: str
    multirun: bool
    harness_version: str | None
    keras_version: str | None
    started_at: str | None = None
    format: int = FORMAT

    def same_command(self, argv: list[str], cwd: Path) -> bool:
        """`argv` run in `cwd` is this command (the arguments as typed, in the same directory)."""
        return list(argv) == list(self.argv) and Path(cwd).resolve() == Path(self.cwd)

    def resume_argv(self, folder: Path) -> list[str]:
        """The arguments that run this command into `folder` (wherever it is now) instead of the folder it named."""
        kept = [arg for arg in self.argv if not arg.startswith(tuple(f"{key}=" for key in FOLDER_KEYS))]
        key = FOLDER_KEYS[0] if self.multirun else FOLDER_KEYS[1]
        return [*kept, f"{key}={Path(folder).resolve()}"]

    def version_changes(self) -> list[str]:
        """What differs between the versions that started the folder and the ones installed now."""
        changes = []
        for name, then in (("harness", self.harness_version), ("keras", self.keras_version)):
            now = installed_version(name)
            if then != now:
                changes.append(f"{name} {then} then, {now} now")
        return changes


def installed_version(package: str) -> str | None:
    """A package's installed version, read without importing it (Keras would start TensorFlow)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def for_this_process(argv: list[str], multirun: bool) -> Command:
    return Command(argv=list(argv), cwd=str(Path.cwd().resolve()), multirun=multirun,
                   harness_version=installed_version("harness"), keras_version=installed_version("keras"),
                   started_at=now_iso())


def write_once(folder: Path, command: Command) -> bool:
    """command.json in `folder` unless it holds one already (a resume keeps the first start's); True if written."""
    path = Path(folder) / COMMAND_FILE
    if path.exists():
        return False
    write_json(path, asdict(command))
    return True


def read(folder: Path) -> Command | None:
    """The folder's command, or None without a readable command.json (a folder from before it existed)."""
    try:
        data = read_json(Path(folder) / COMMAND_FILE)
    except DamagedFile:
        return None
    if data is None or not isinstance(data.get("argv"), list) or not isinstance(data.get("cwd"), str):
        return None
    if not isinstance(data.get("multirun"), bool):
        return None
    fields = Command.__dataclass_fields__
    # versions it lacks were not recorded: a resume cannot compare them (version_changes), and goes on
    return Command(**{"harness_version": None, "keras_version": None,
                      **{key: value for key, value in data.items() if key in fields}})


def resume_line(folder: Path) -> str:
    """The one line that resumes `folder` from any directory: `python -m harness.resume /abs/sweeps/<id>`."""
    return f"python -m harness.resume {shlex.quote(str(Path(folder).resolve()))}"


def resume_hint(folder: Path) -> str:
    """What resumes `folder`, for a message: its resume line, or, for a folder made before command.json existed,
    the command that made it with the folder named."""
    if read(folder) is not None:
        return resume_line(folder)
    key = FOLDER_KEYS[0] if is_sweep(folder) else FOLDER_KEYS[1]
    return f"the command that made it, with {key}={shlex.quote(str(Path(folder).resolve()))}"


def python_line(argv: list[str]) -> str:
    """`python -m harness ARGS`, quoted for a shell."""
    return shlex.join(["python", "-m", "harness", *argv])

