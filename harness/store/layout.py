"""Every file name of a sweep folder and a run folder, spelled once, and the walk over a sweep's runs.

    sweeps/<sweep-id>/                 command.json, sweep.json, multirun.yaml, interpolation.parquet (+ .log),
                                       .harness.lock, tracking.json, and a study's own (a study's files module)
    sweeps/<sweep-id>/<job>/           run.json, metrics.parquet, train.log, checkpoint.npz (while it trains),
                                       probes.json, target.json, initial.weights.npz, final.weights.npz, tb/,
                                       .hydra/ (a single run's: command.json too), and a study's own
    reports/                           <sweep-id>-<hash>.html, latest.html, index.html
    sweeps/                            mlflow.db, mlartifacts/ (tracking=mlflow's default store)

Readers and writers ask this module for a name, never a string of their own; a study's own files (diagnosis.json,
recovery.json, data_checks.json) are named in its folder's files module (harness/studies/<name>/files.py).
"""
from __future__ import annotations

from pathlib import Path

# a sweep folder
SWEEP_FILE = "sweep.json"                    # every job of the command, written before any of them runs
INTERPOLATION_FILE = "interpolation.parquet"  # the loss between the smallest- and largest-batch solutions
INTERPOLATION_LOG = "interpolation.log"      # that job's TensorFlow chatter and any traceback, off the console
LOCK_FILE = ".harness.lock"                  # in a command's output folder, held while the command runs
TRACKING_FILE = "tracking.json"              # tracking=mlflow: the store, the sweep's parent run, who logs live
COMMAND_FILE = "command.json"                # the command, its directory and versions: what a resume runs again

# beside the sweep folders
MLFLOW_DB, MLFLOW_ARTIFACTS = "mlflow.db", "mlartifacts"  # tracking=mlflow's default store and its artifacts

# a run folder
RUN_FILE = "run.json"                        # status and provenance
METRICS_FILE = "metrics.parquet"             # one row per completed epoch
TRAIN_LOG = "train.log"                      # the run's log
CHECKPOINT = "checkpoint.npz"                # while the run trains; removed when it ends
PROBES_FILE = "probes.json"                  # the end-of-run probes
TARGET_FILE = "target.json"                  # with target_tune_acc: where the target was reached, and what then
INITIAL_WEIGHTS, FINAL_WEIGHTS = "initial.weights.npz", "final.weights.npz"
TB_DIR = "tb"                                # TensorBoard event files
HYDRA_DIR = ".hydra"                         # Hydra's own record: config.yaml, overrides.yaml
HYDRA_CONFIG, HYDRA_OVERRIDES = "config.yaml", "overrides.yaml"

# the reports folder
INDEX_FILE, LATEST_FILE = "index.html", "latest.html"


def _job_order(run_dir: Path) -> tuple:
    name = run_dir.name
    return (not name.isdigit(), int(name) if name.isdigit() else name)


def run_dirs(sweep_dir: Path) -> list[Path]:
    """The sweep's run folders that hold a run.json, in job order (numbered folders first, by number)."""
    return sorted((path.parent for path in Path(sweep_dir).glob(f"*/{RUN_FILE}")), key=_job_order)


def is_sweep(folder: Path) -> bool:
    """A folder a multirun wrote: its sweep.json, or at least one run folder with a run.json."""
    folder = Path(folder)
    return (folder / SWEEP_FILE).exists() or any(folder.glob(f"*/{RUN_FILE}"))
