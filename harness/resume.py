"""`python -m harness.resume FOLDER [OVERRIDE ...]`: run a sweep's (or a single run's) command into its folder again,
from any directory: the line an interrupted or unfinished command prints.

The folder's command.json holds the command as it was typed, the directory it ran in and the versions that ran it.
The command runs again in that directory (its relative paths: dataset.path, --config-dir, reports/), into this
folder wherever it is now: completed runs are left alone, the others resume from their last epoch, failed ones
start again. OVERRIDEs are added to it, for what is not the runs' config (`tracking=mlflow`); one that changes a
run is refused, as for the same command with another setting. A version of harness or Keras other than the one
that started the folder is said in one line, and the resume goes on.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.launch.resume import NotResumable, resume_command
from harness.store import command_file

EXIT_INVALID = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.resume", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, metavar="FOLDER", help="a sweep's folder (sweeps/<sweep-id>) or a "
                                                                     "single run's")
    parser.add_argument("overrides", nargs="*", metavar="OVERRIDE", help="added to the command (tracking=mlflow)")
    args = parser.parse_args(argv)
    try:
        cwd, harness_args, warnings = resume_command(args.folder)
    except NotResumable as err:
        print(f"harness.resume: error: FOLDER={str(args.folder)!r} is not allowed: {err}", file=sys.stderr)
        return EXIT_INVALID
    for warning in warnings:
        print(f"harness.resume: warning: {warning}", file=sys.stderr)
    harness_args = [*harness_args, *args.overrides]
    print(f"harness.resume: in {cwd}: {command_file.python_line(harness_args)}", file=sys.stderr, flush=True)
    os.chdir(cwd)
    sys.stdout.flush()
    # the command itself, in this process: its signals, exit code and output are the command's
    os.execv(sys.executable, [sys.executable, "-m", "harness", *harness_args])


if __name__ == "__main__":
    sys.exit(main())
