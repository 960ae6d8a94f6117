"""Command line: Hydra composes the config, this module validates it and runs the jobs.

The only module (with the launcher plugin) that imports hydra or omegaconf. Before Hydra starts any job, every
job of the command is composed and validated, so a bad key or value anywhere in a sweep exits 2 with one line
and nothing written. TensorFlow is not imported until a job runs.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from harness import analysis, config, preflight, signals, sweep_end
from harness.store import files, layout
from harness.store.layout import SWEEP_FILE

CONF_DIR = Path(__file__).resolve().parent / "conf"  # installed with the package; the repository links conf/ to it
CONFIG_NAME = "config"
REMOTE_LAUNCHERS = ("SlurmLauncher",)  # launchers whose runs go to other machines
EXIT_OK, EXIT_FAILED_RUNS, EXIT_INVALID = 0, 1, 2  # interrupted: 128 + the signal (130 for Ctrl-C)

log = logging.getLogger("harness")


def to_run_config(cfg: DictConfig) -> config.RunConfig:
    """Validate a composed Hydra config (hydra node excluded) into a frozen RunConfig."""
    if "hydra" in cfg:
        cfg = cfg.copy()
        with open_dict(cfg):
            del cfg["hydra"]  # its run-time fields are not resolvable outside a job
    plain: Any = OmegaConf.to_container(cfg, resolve=True)
    return config.from_dict(plain)


def recorded_run_config(run_dir: Path) -> config.RunConfig:
    """A finished run's RunConfig, from the composed config Hydra saved in its folder (.hydra/config.yaml)."""
    return to_run_config(OmegaConf.load(Path(run_dir) / layout.HYDRA_DIR / layout.HYDRA_CONFIG))


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


@dataclass(frozen=True)
class CommandPlan:
    jobs: list[list[str]]   # each job's task overrides, as Hydra's basic sweeper expands them
    output_dir: Path        # the sweep folder, or the run folder of a single run
    launcher: str           # the launcher's class path
    run_configs: list[config.RunConfig]


def _expand_jobs(overrides: list[str], multirun: bool, config_name: str) -> tuple[list[list[str]], Path, str]:
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
        preflight.check_n_jobs(base.hydra.launcher.get("n_jobs"))
    if not multirun:
        return [task], Path(str(base.hydra.run.dir)), launcher
    params = base.hydra.sweeper.get("params")
    params = OmegaConf.to_container(params, resolve=False) if params else {}
    arguments = [f"{key}={value}" for key, value in params.items()] + task
    jobs = BasicSweeper.split_arguments(parser.parse_overrides(arguments), None)[0]
    return jobs, Path(str(base.hydra.sweep.dir)), launcher


def plan_command(overrides: list[str], multirun: bool, config_name: str = CONFIG_NAME) -> CommandPlan:
    """Compose and validate every job of the command; raises ConfigError or a Hydra error on the first bad one."""
    from hydra import compose, initialize_config_dir

    from harness.resources import visible_gpus

    preflight.check_searchpath(re.findall(r"file://[^'\],]+", " ".join(o for o in overrides if "searchpath" in o)))
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="harness"):
        jobs, output_dir, launcher = _expand_jobs(overrides, multirun, config_name)
        hydra_overrides = [o.input_line for o in OverridesParser.create().parse_overrides(overrides)
                           if o.is_hydra_override()]  # e.g. hydra.searchpath: where the jobs' configs are found
        run_configs = [to_run_config(compose(config_name, overrides=[*hydra_overrides, *job])) for job in jobs]
    if not any(name in launcher for name in REMOTE_LAUNCHERS):  # their GPUs are not this machine's
        preflight.check_devices(run_configs, visible_gpus(),
                                ids_applied=bool(os.environ.get("HARNESS_GPUS_ASSIGNED")))
    preflight.check_existing_runs(jobs, run_configs, output_dir, multirun)
    return CommandPlan(jobs, output_dir, launcher, run_configs)


@contextmanager
def output_folder_lock(folder: Path, key: str):
    """Hold the command's output folder while it runs: a second command there would run the same runs at once,
    each rewriting the other's files, so it is refused (exit 2)."""
    with ExitStack() as held:
        try:
            held.enter_context(files.folder_lock(folder))
        except files.FolderBusy as busy:
            raise config.ConfigError(
                key, str(folder), f"a folder no other harness command is running in (process {busy} is running in "
                "this one); wait for it to end, or choose another folder") from None
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
                raise  # the machine's fault, not the command's: exit 1 (main)
            raise config.ConfigError(key, str(folder), f"a folder this user can write ({err.strerror})") from None
        yield


def hydra_job(cfg: DictConfig) -> float | None:
    """One job (Hydra's task function): validate, train, and record a failure instead of ending the sweep; returns
    the run's final val_acc, the tracked metric a Hydra sweeper optimises (None when the run failed)."""
    from harness.run import run_experiment

    run_cfg = to_run_config(cfg)
    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    run_id = f"{run_dir.parent.name}/{run_dir.name}"
    try:
        return run_experiment(run_cfg, run_dir, run_id=run_id, overrides=list(hydra_cfg.overrides.task))
    except Exception as err:
        log.error("run %s failed: %s: %s (details in %s)", run_id, type(err).__name__, err, run_dir / layout.RUN_FILE)
        return None


def main(argv: list[str] | None = None) -> int:
    """`python -m harness [overrides] [-m]`; returns the exit code. Flags may come anywhere among overrides."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()
    parser.prog = "python -m harness"
    args = parser.parse_intermixed_args(sys.argv[1:] if argv is None else argv)
    signals.install()
    if args.config_dir is not None:  # the user's own configs: searched after the built-in ones, in every job
        folder = Path(args.config_dir).expanduser().resolve()
        args.overrides = [*args.overrides, f"hydra.searchpath=[{quote_override('file://' + str(folder))}]"]
        args.config_dir = None
    if any(getattr(args, flag) for flag in ("help", "hydra_help", "cfg", "info", "shell_completion")):
        _run_hydra(parser, args)
        return EXIT_OK
    folder_key = "hydra.sweep.dir" if args.multirun else "hydra.run.dir"
    with ExitStack() as held:
        try:
            plan = plan_command(args.overrides, args.multirun, args.config_name or CONFIG_NAME)
            held.enter_context(output_folder_lock(plan.output_dir, folder_key))
            if args.multirun:  # what the report needs to know which runs have not started
                files.write_json(plan.output_dir / SWEEP_FILE, {"jobs": [{"job": str(num), "overrides": job}
                                                                          for num, job in enumerate(plan.jobs)]})
        except config.ConfigError as err:
            print(f"harness: error: {err}", file=sys.stderr)
            return EXIT_INVALID
        except (HydraException, OmegaConfBaseException) as err:
            print(f"harness: error: {one_line(err, args.overrides)}", file=sys.stderr)
            return EXIT_INVALID
        except OSError as err:  # a full disk or a read-only folder: nothing can be recorded
            print(f"harness: error: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
            return EXIT_FAILED_RUNS
        # Hydra would resolve the folder's ${now:...} again: pin it to the one checked and locked here
        args.overrides = [*args.overrides, f"{folder_key}={quote_override(str(plan.output_dir))}"]
        return _run(parser, args, plan)


def _run_hydra(parser, args) -> None:
    from hydra._internal.utils import _run_hydra as run_hydra

    run_hydra(args=args, args_parser=parser, task_function=hydra_job, config_path=str(CONF_DIR),
              config_name=CONFIG_NAME)


def _run(parser, args, plan: CommandPlan) -> int:
    """Hand the validated command to Hydra; the exit code from what the runs' files say."""
    try:
        _run_hydra(parser, args)
    except KeyboardInterrupt as err:  # Ctrl-C, SIGTERM, SIGUSR2 (harness.signals)
        code, name = signals.exit_code(err)
        print(f"harness: interrupted ({name}); the same command resumes the sweep", file=sys.stderr)
        if args.multirun and plan.output_dir.exists():
            sweep_end.write_report(plan.output_dir)
        return code
    if args.multirun:
        failed, unfinished = analysis.failed_runs(plan.output_dir), analysis.unfinished_runs(plan.output_dir)
    else:
        failed, unfinished = analysis.run_outcome(plan.output_dir)
    if failed:
        print(f"harness: {len(failed)} run(s) failed: {', '.join(failed)}", file=sys.stderr)
    if unfinished:
        print(f"harness: {len(unfinished)} run(s) did not finish: {', '.join(unfinished)}", file=sys.stderr)
    if args.multirun:
        print(f"sweep: {plan.output_dir}")
        sweep_end.interpolate(plan.output_dir)
        sweep_end.write_report(plan.output_dir)
    else:
        print(f"run: {plan.output_dir}")
    return EXIT_FAILED_RUNS if failed or unfinished else EXIT_OK
