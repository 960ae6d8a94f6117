"""`python -m harness.resume FOLDER [OVERRIDE ...]`: run a sweep's (or a single run's) command into its folder again,
from any directory: the line an interrupted or unfinished command prints.

The folder's command.json holds the command as it was typed, the directory it ran in and the versions that ran it.
The command runs again in that directory (its relative paths: dataset.path, --config-dir, reports/), into this
folder wherever it is now: completed runs are left alone, the others resume from their last epoch, failed ones
start again. OVERRIDEs are added to it, for what is not the runs' config (`tracking=mlflow`); one that changes a
run is refused, as for the same command with another setting. A version of harness or Keras other than the one
that started the folder is said in one line, and the resume goes on.

`--add-seeds N` first plans N more seeds into the folder as new jobs (harness.launch.added_seeds): every arm of the
main job on each seed after the sweep's highest, or the runs a study's reading needs there (recover: b, B and the
recipe); the report then reads every verdict over all seeds and says the seeds were added after a look.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.launch.added_seeds import CannotAdd, add
from harness.launch.resume import NotResumable, resume_command
from harness.store import command_file

EXIT_INVALID = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.resume", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, metavar="FOLDER", help="a sweep's folder (sweeps/<sweep-id>) or a "
                                                                     "single run's")
    parser.add_argument("overrides", nargs="*", metavar="OVERRIDE", help="added to the command (tracking=mlflow)")
    parser.add_argument("--add-seeds", dest="add_seeds", type=int, metavar="N", default=None,
                        help="N more seeds after the sweep's highest, as new jobs in the same folder: every arm of the "
                             "main job on each, or what a study's reading needs (harness.launch.added_seeds)")
    args = parser.parse_args(argv)
    try:
        cwd, harness_args, warnings = resume_command(args.folder)
    except NotResumable as err:
        print(f"harness.resume: error: FOLDER={str(args.folder)!r} is not allowed: {err}", file=sys.stderr)
        return EXIT_INVALID
    if args.add_seeds is not None:
        folder = args.folder.expanduser().resolve()  # given from here, not from the command's folder
        os.chdir(cwd)  # the command's relative paths (dataset.path) hold there
        try:
            added = _add_seeds(folder, args.add_seeds)
        except CannotAdd as err:
            print(f"harness.resume: error: --add-seeds={args.add_seeds} is not allowed: {err}", file=sys.stderr)
            return EXIT_INVALID
        print(f"harness.resume: {len(added)} runs added (jobs {added[0].job}-{added[-1].job})", file=sys.stderr)
    for warning in warnings:
        print(f"harness.resume: warning: {warning}", file=sys.stderr)
    harness_args = [*harness_args, *args.overrides]
    print(f"harness.resume: in {cwd}: {command_file.python_line(harness_args)}", file=sys.stderr, flush=True)
    os.chdir(cwd)
    sys.stdout.flush()
    # the command itself, in this process: its signals, exit code and output are the command's
    os.execv(sys.executable, [sys.executable, "-m", "harness", *harness_args])


def _add_seeds(folder: Path, count: int) -> list:
    """The new seeds' jobs planned into the folder's sweep.json, each composed and validated as a job is."""
    from harness.config.compose import compose_jobs

    return add(folder, count, lambda job: compose_jobs(job, multirun=False).run_configs[0])


if __name__ == "__main__":
    sys.exit(main())
