"""`python -m harness.track SWEEP [SWEEP ...]`: log finished sweeps to MLflow from their files.

The way to put a sweep into MLflow after the fact: one made before tracking existed, or without `tracking=mlflow`,
or whose tracker stopped answering while it ran (the sweep's end says so, and names this command). Each run is
brought up to date: what MLflow lacks of it is logged (each epoch once), then its final status; the report, the
results table and diagnosis.json go to the sweep's parent run. Run it again at any time: it logs only what is
missing. The store is the one the sweep was tracked in (its tracking.json), else the default (SQLite beside the
sweep folder: sweeps/mlflow.db); --uri and --experiment choose another.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness.fields import ConfigError
from harness.launch.sweep_end import REPORTS_DIR, sweep_artifacts
from harness.store import files, layout
from harness.tracking import settings, sync

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.track", description=__doc__.split("\n\n")[0])
    parser.add_argument("sweeps", nargs="+", type=Path, metavar="SWEEP", help="sweep folders (sweeps/<sweep-id>)")
    parser.add_argument("--uri", help="the MLflow tracking URI (default: the sweep's own, else sqlite:///"
                                      "<the sweep folder's parent>/mlflow.db); http://HOST:PORT for a server")
    parser.add_argument("--experiment", help="the MLflow experiment (default: the sweep's folder name)")
    parser.add_argument("--reports", type=Path, default=REPORTS_DIR, help="where the sweeps' reports are "
                                                                          "(default: reports)")
    args = parser.parse_args(argv)
    for sweep_dir in args.sweeps:
        if not sweep_dir.is_dir() or not layout.is_sweep(sweep_dir):
            print(f"harness.track: error: SWEEP={str(sweep_dir)!r} is not allowed: a sweep folder (one holding "
                  "sweep.json or run folders), e.g. sweeps/2026-12-03_09-00-00", file=sys.stderr)
            return EXIT_INVALID
    code = EXIT_OK
    for sweep_dir in args.sweeps:
        try:
            tracking = _tracking(sweep_dir, args.uri, args.experiment)
            # a command running in the sweep would log the same runs at once
            with files.folder_lock(sweep_dir), tempfile.TemporaryDirectory() as scratch:
                result = sync.sync_sweep(sweep_dir, tracking, sweep_artifacts(sweep_dir, Path(scratch), args.reports),
                                         status=sync.sweep_status(sweep_dir))
        except ConfigError as err:
            print(f"harness.track: error: {err}", file=sys.stderr)
            return EXIT_INVALID
        except files.FolderBusy as busy:
            print(f"harness.track: error: SWEEP={str(sweep_dir)!r} is not allowed: a sweep no harness command is "
                  f"running in (process {busy} is); track it once that command ends", file=sys.stderr)
            return EXIT_INVALID
        except sync.TrackingFailed as err:
            print(f"harness.track: {sweep_dir}: not logged: {err}", file=sys.stderr)
            code = EXIT_FAILED
            continue
        sweep = settings.read_sweep(sweep_dir)
        print(f"{sweep_dir}: {result.runs} of {len(layout.run_dirs(sweep_dir))} run(s) logged from their files to "
              f"{sweep.uri}, experiment {sweep.experiment!r}; the rest were there already")
    return code


def _tracking(sweep_dir: Path, uri: str | None, experiment: str | None) -> settings.Tracking | None:
    """The store the command names, or None for the sweep's own (its tracking.json); the default for a sweep that
    has none. An invalid --uri or --experiment raises ConfigError naming the option."""
    recorded = settings.read_sweep(sweep_dir)
    if uri is None and experiment is None and recorded is not None:
        return None
    if recorded is not None:
        uri = recorded.uri if uri is None else uri
        experiment = recorded.experiment if experiment is None else experiment
    try:
        return settings.from_dict({"uri": uri, "experiment": experiment}, sweep_dir)
    except ConfigError as err:
        option = {"tracking.uri": "--uri", "tracking.experiment": "--experiment"}.get(err.key, err.key)
        raise ConfigError(option, err.value, err.allowed) from None


if __name__ == "__main__":
    sys.exit(main())
