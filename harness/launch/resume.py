"""Resuming a command's folder: the same command again finds its unfinished sweep, and `python -m harness.resume
FOLDER` runs a folder's recorded command into it from anywhere (harness/resume.py).

A sweep's default folder is new at every start (`sweeps/${now:...}`), so the same command alone would start over.
It does not: when the command names no folder, the newest sweep folder beside the new one that this same command
started (its command.json: the same arguments in the same directory) and that still has runs to run (not completed
or diverged: failed, interrupted, killed, damaged or never started) is resumed instead, and the command says so. Only
the newest is looked at: once the same command has finished a sweep, running it again starts a fresh one.
"""
from __future__ import annotations

from pathlib import Path

from harness.assess import sweep as sweep_files
from harness.store import command_file, files
from harness.store.layout import COMMAND_FILE


def unfinished_sweep(parent: Path, argv: list[str], cwd: Path) -> Path | None:
    """The sweep folder in `parent` to resume for the command `argv` run in `cwd`, or None: the newest one this
    same command started, if it has runs left to run and no command holds it now."""
    parent = Path(parent)
    if not parent.is_dir():
        return None
    started = []
    for folder in parent.iterdir():
        if not (folder / COMMAND_FILE).is_file():
            continue
        command = command_file.read(folder)
        if command is not None and command.multirun and command.same_command(argv, cwd):
            started.append((command.started_at or "", folder.name, folder))
    if not started:
        return None
    newest = max(started)[2]
    if files.folder_busy(newest) or not sweep_files.runs_left(newest):
        return None
    return newest


class NotResumable(ValueError):
    """A folder `python -m harness.resume` cannot resume, and why."""


def resume_command(folder: Path) -> tuple[Path, list[str], list[str]]:
    """(the directory to run in, the arguments of `python -m harness`, warnings) that resume `folder`."""
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise NotResumable("a folder a harness command wrote (sweeps/<sweep-id>, or a single run's folder)")
    command = command_file.read(folder)
    if command is None:
        raise NotResumable(f"a folder holding {COMMAND_FILE} (written by every command since harness 0.1.0 of "
                           "2026-12); for an older sweep, run its command again with hydra.sweep.dir=" + str(folder))
    cwd = Path(command.cwd)
    if not cwd.is_dir():
        raise NotResumable(f"a folder whose command's directory exists; it ran in {cwd}, which is gone (run "
                           f"{command_file.python_line(command.resume_argv(folder))} from where its paths hold)")
    warnings = []
    changes = command.version_changes()
    if changes:
        warnings.append(f"the folder's runs were made with other versions ({'; '.join(changes)}): runs resumed or "
                        "started now may differ from its finished ones")
    return cwd, command.resume_argv(folder), warnings
