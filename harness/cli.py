"""Command line: Hydra composes the config, this module validates it and runs the jobs.

The only module (with the launcher plugin) that imports hydra or omegaconf. Before Hydra starts any job, every
job of the command is composed and validated (`preflight`), so a bad key or value anywhere in a sweep exits 2
with one line and nothing written. TensorFlow is not imported until a job runs.
"""
from __future__ import annotations

import fcntl
import logging
import os
import re
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from harness import config
from harness.runlog import RUN_FILE, SWEEP_FILE, read_json, recorded_config, write_json

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
CONFIG_NAME = "config"
REMOTE_LAUNCHERS = ("SlurmLauncher",)  # launchers whose runs go to other machines
REPORTS_DIR = Path("reports")  # like sweeps/, relative to where the command runs
LOCK_FILE = ".harness.lock"  # in the command's output folder, held while the command runs
EXIT_OK, EXIT_FAILED_RUNS, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 130

log = logging.getLogger("harness")


class Session:
    """What Hydra's callback and in-process jobs report back to `main`."""

    failed_runs: list[str] = []
    unfinished_runs: list[str] = []
    sweep_dir: Path | None = None
    last_run_dir: Path | None = None


class SweepCallback(Callback):
    """Hydra callback: note the sweep folder, whichever launcher runs the jobs."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        Session.sweep_dir = Path(str(config.hydra.sweep.dir))


def to_run_config(cfg: DictConfig) -> config.RunConfig:
    """Validate a composed Hydra config (hydra node excluded) into a frozen RunConfig."""
    if "hydra" in cfg:
        cfg = cfg.copy()
        with open_dict(cfg):
            del cfg["hydra"]  # its run-time fields are not resolvable outside a job
    plain: Any = OmegaConf.to_container(cfg, resolve=True)
    return config.from_dict(plain)


def _allowed_keys(key: str) -> str:
    group, _, _ = key.rpartition(".")
    if key.split(".", 1)[0] == "hydra":
        return f"the keys of Hydra's own config under {group} (`python -m harness --cfg hydra` lists them)"
    keys = {"dataset": config.DATA_KEYS, "model": config.MODEL_KEYS}.get(group)
    if keys is None:
        return ", ".join(sorted(config.TOP_KEYS)) + " (and dataset.*, model.* keys)"
    return ", ".join(f"{group}.{k}" for k in sorted(keys))


def one_line(err: BaseException, overrides: list[str]) -> str:
    """Hydra's multi-line messages folded into the one line the user sees, naming what is allowed."""
    text = str(err)
    unknown = re.search(r"Could not override '([^']+)'", text) or re.search(r"Key '([^']+)' is not in struct", text)
    if unknown:
        key = unknown.group(1)
        given = next((o for o in overrides if o.lstrip("+~").split("=", 1)[0] == key), key)
        return f"{given} is not allowed: unknown key; valid keys are {_allowed_keys(key)}"
    if isinstance(err, MissingConfigException):
        missing = re.search(r"Could not find '([^']+)/([^'/]+)'", text)
        if missing:
            options = re.findall(r"^\t(\S+)$", text.partition("Available options")[2], flags=re.MULTILINE)
            allowed = f"one of {', '.join(options)}" if options else "an existing config"
            return f"{missing.group(1)}={missing.group(2)} is not allowed: {allowed}"
    if isinstance(err, OverrideParseException):
        text = f"cannot parse override '{err.override}': {err.message}"
    merging = re.match(r"Error merging override (\S+)", text)
    if merging and err.__cause__ is not None:  # the cause says what is wrong with the value
        return f"{merging.group(1)} is not allowed: {str(err.__cause__).splitlines()[0]}"
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def quote_override(value: str) -> str:
    """A value quoted for a Hydra command-line override, whatever characters it holds.

    In a quoted value Hydra unescapes only backslashes that come before a quote (or the closing quote), so only
    those are doubled, and each quote is escaped.
    """
    escaped = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", value)
    escaped = re.sub(r"(\\+)$", lambda m: m.group(1) * 2, escaped)
    return f"'{escaped}'"


@dataclass
class CommandPlan:
    jobs: list[list[str]]   # each job's task overrides, as Hydra's basic sweeper expands them
    output_dir: Path        # the sweep folder, or the run folder of a single run
    launcher: str           # the launcher's class path


def expand_jobs(overrides: list[str], multirun: bool, config_name: str = CONFIG_NAME) -> CommandPlan:
    """The jobs the command would run, where they would write, and which launcher would run them."""
    from hydra import compose
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    parser = OverridesParser.create()
    parsed = parser.parse_overrides(overrides)
    task = [o.input_line for o in parsed if not o.is_hydra_override()]  # what a job's run records
    fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
    base = compose(config_name, overrides=fixed if multirun else overrides, return_hydra_config=True)
    launcher = str(base.hydra.launcher.get("_target_", ""))
    if multirun and launcher.endswith("HarnessLauncher"):
        n_jobs = base.hydra.launcher.get("n_jobs")
        if n_jobs is not None and n_jobs < 1:
            raise config.ConfigError("hydra.launcher.n_jobs", n_jobs, "an integer >= 1, or null for one run at a time "
                                     "per GPU or per CPU core")
    if not multirun:
        return CommandPlan([task], Path(str(base.hydra.run.dir)), launcher)
    params = base.hydra.sweeper.get("params")
    params = OmegaConf.to_container(params, resolve=False) if params else {}
    arguments = [f"{key}={value}" for key, value in params.items()] + task
    jobs = BasicSweeper.split_arguments(parser.parse_overrides(arguments), None)[0]
    return CommandPlan(jobs, Path(str(base.hydra.sweep.dir)), launcher)


def check_devices(run_configs: list[config.RunConfig], gpu_ids: list[int], ids_applied: bool = False) -> None:
    """Runs on this machine may not ask for more GPUs than it has, unless they simulate devices on the CPU.

    `ids_applied`: the launcher already narrowed CUDA_VISIBLE_DEVICES to the run's `devices`.
    """
    for cfg in run_configs:
        device = cfg.device
        if device.devices is not None and not ids_applied:
            missing = [i for i in device.devices if i not in gpu_ids]
            if missing:
                raise config.ConfigError("devices", list(device.devices), f"ids of visible GPUs {gpu_ids}")
        elif device.gpus > len(gpu_ids) and not (device.simulate_devices and not gpu_ids):
            raise config.ConfigError(
                "gpus", device.gpus, f"at most {len(gpu_ids)} (GPUs visible here), or simulate_devices=true "
                "to split the CPU into that many devices (only when no GPU is visible)",
            )


def check_existing_runs(jobs: list[list[str]], run_configs: list[config.RunConfig], output_dir: Path,
                        multirun: bool) -> None:
    """Re-running into a folder resumes it, so each run folder must hold this command's run there (or none).

    The same run is the same resolved config, however the command spelled or ordered its overrides.
    """
    for num, (overrides, run_cfg) in enumerate(zip(jobs, run_configs)):
        run_dir = output_dir / str(num) if multirun else output_dir
        record = read_json(run_dir / RUN_FILE)
        if record is not None and record.get("config") != recorded_config(run_cfg.flat()):
            key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
            raise config.ConfigError(
                key, str(output_dir), f"a new folder or one holding this same command's runs; {run_dir} ran "
                f"'{' '.join(record.get('overrides', []))}' but this command's run there is '{' '.join(overrides)}'"
            )


def preflight(overrides: list[str], multirun: bool, config_name: str = CONFIG_NAME) -> list[config.RunConfig]:
    """Compose and validate every job; raises ConfigError or a Hydra error on the first bad one."""
    return _preflight(overrides, multirun, config_name)[0]


def _preflight(overrides: list[str], multirun: bool, config_name: str) -> tuple[list[config.RunConfig], CommandPlan]:
    from hydra import compose, initialize_config_dir

    from harness.scheduler import visible_gpus

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="harness"):
        plan = expand_jobs(overrides, multirun, config_name)
        run_configs = [to_run_config(compose(config_name, overrides=job)) for job in plan.jobs]
    if not any(name in plan.launcher for name in REMOTE_LAUNCHERS):  # their GPUs are not this machine's
        check_devices(run_configs, visible_gpus(), ids_applied=bool(os.environ.get("HARNESS_GPUS_ASSIGNED")))
    check_existing_runs(plan.jobs, run_configs, plan.output_dir, multirun)
    return run_configs, plan


@contextmanager
def output_folder_lock(folder: Path, key: str):
    """Hold the command's output folder while it runs; a second command on the same folder is refused.

    Two commands in one folder would run (or resume) the same runs at once, each rewriting the other's files.
    The lock is the operating system's (flock), so it goes with the process however that ends: a killed sweep's
    folder can be resumed at once. The holder's pid is written in the lock file for the error message.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / LOCK_FILE, "a+")
    except OSError as err:
        raise config.ConfigError(key, str(folder), f"a folder this user can write ({err.strerror})") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise config.ConfigError(
                key, str(folder), f"a folder no other harness command is running in (process {holder} is running "
                "in this one); wait for it to end, or choose another folder"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield


@hydra.main(config_path=str(CONF_DIR), config_name=CONFIG_NAME, version_base="1.3")
def hydra_job(cfg: DictConfig) -> float | None:
    """One job: validate, train, and record a failure instead of ending the sweep."""
    from harness.run import run_experiment

    run_cfg = to_run_config(cfg)
    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    run_id = f"{run_dir.parent.name}/{run_dir.name}"
    Session.last_run_dir = run_dir
    try:
        return run_experiment(run_cfg, run_dir, run_id=run_id, overrides=list(hydra_cfg.overrides.task))
    except Exception as err:
        Session.failed_runs.append(run_id)
        log.error("run %s failed: %s: %s (details in %s)", run_id, type(err).__name__, err, run_dir / "run.json")
        return None


def main(argv: list[str] | None = None) -> int:
    """`python -m harness [overrides] [-m]`; returns the exit code."""
    from hydra._internal.utils import get_args_parser

    argv = sys.argv[1:] if argv is None else argv
    parser = get_args_parser()
    parser.prog = "python -m harness"
    args = parser.parse_args(argv)
    informational = args.help or args.hydra_help or args.cfg or args.info or args.shell_completion
    if informational:
        sys.argv = [sys.argv[0], *argv]
        hydra_job()
        return EXIT_OK
    folder_key = "hydra.sweep.dir" if args.multirun else "hydra.run.dir"
    with ExitStack() as held:
        try:
            _, plan = _preflight(args.overrides, args.multirun, args.config_name or CONFIG_NAME)
            held.enter_context(output_folder_lock(plan.output_dir, folder_key))
        except config.ConfigError as err:
            print(f"harness: error: {err}", file=sys.stderr)
            return EXIT_INVALID
        except (HydraException, OmegaConfBaseException) as err:
            print(f"harness: error: {one_line(err, args.overrides)}", file=sys.stderr)
            return EXIT_INVALID
        if args.multirun:  # what the report needs to know which runs have not started
            write_json(plan.output_dir / SWEEP_FILE, {"jobs": [{"job": str(num), "overrides": job}
                                                                for num, job in enumerate(plan.jobs)]})
        # Hydra resolves the folder's ${now:...} again; pin it to the one checked and locked here
        return _run(args, with_override(argv, args.overrides, f"{folder_key}={quote_override(str(plan.output_dir))}"))


def with_override(argv: list[str], overrides: list[str], extra: str) -> list[str]:
    """argv with `extra` as the last override: right after the user's overrides, which argparse takes only as
    one unbroken run (flags such as -m may come before or after it), so `extra` wins over a user's same key."""
    n = len(overrides)
    start = next((i for i in range(len(argv) - n + 1) if argv[i:i + n] == overrides), None) if n else None
    if start is None:
        return [extra, *argv]
    return [*argv[:start + n], extra, *argv[start + n:]]


def _run(args, argv: list[str]) -> int:
    """Hand the validated command to Hydra; the exit code from what the runs' files say."""
    Session.failed_runs, Session.unfinished_runs = [], []  # a fresh tally for each command run in this process
    sys.argv = [sys.argv[0], *argv]
    try:
        hydra_job()
    except KeyboardInterrupt:
        print("harness: interrupted; the same command resumes the sweep", file=sys.stderr)
        if Session.sweep_dir is not None and Session.sweep_dir.exists():
            _write_report(Session.sweep_dir)
        return EXIT_INTERRUPTED
    if args.multirun and Session.sweep_dir is not None:
        Session.failed_runs = failed_runs(Session.sweep_dir)
        Session.unfinished_runs = unfinished_runs(Session.sweep_dir)
    if Session.failed_runs:
        print(f"harness: {len(Session.failed_runs)} run(s) failed: {', '.join(Session.failed_runs)}", file=sys.stderr)
    if Session.unfinished_runs:
        print(f"harness: {len(Session.unfinished_runs)} run(s) did not finish: {', '.join(Session.unfinished_runs)}",
              file=sys.stderr)
    if args.multirun and Session.sweep_dir is not None:
        print(f"sweep: {Session.sweep_dir}")
        _write_report(Session.sweep_dir)
    elif Session.last_run_dir is not None:
        print(f"run: {Session.last_run_dir}")
    return EXIT_FAILED_RUNS if Session.failed_runs or Session.unfinished_runs else EXIT_OK


def failed_runs(sweep_dir: Path) -> list[str]:
    """Runs of the sweep whose run.json says failed: the files decide, whichever launcher ran them."""
    failed = []
    for run_file in sorted(sweep_dir.glob(f"*/{RUN_FILE}"), key=lambda p: (len(p.parent.name), p.parent.name)):
        record = read_json(run_file) or {}
        if record.get("status") == "failed":
            failed.append(record.get("run_id", run_file.parent.name))
    return failed


def unfinished_runs(sweep_dir: Path) -> list[str]:
    """After the sweep: its runs still marked running (another command holds them) or never started."""
    from harness.analysis import not_started_jobs, read_run_records

    running = [r.get("run_id", r["job"]) for r in read_run_records(sweep_dir) if r.get("status") == "running"]
    return running + [f"{sweep_dir.name}/{job} (not started)" for job in not_started_jobs(sweep_dir)]


def _write_report(sweep_dir: Path) -> None:
    from harness.report import write_report

    print(write_report(sweep_dir, REPORTS_DIR))  # the last line: the report's path
