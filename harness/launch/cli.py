"""Command line: plan every job of the command (composed by harness.config.compose), check it, run it with Hydra.

Hydra and omegaconf are imported here, in harness.config (compose, hydra_internals) and in the plugins only.
Before Hydra starts any job, every job of the command is composed and validated, so a bad key or value anywhere in
a sweep exits 2 with one line and nothing written. TensorFlow is not imported until a job runs.
"""
from __future__ import annotations

import errno
import logging
import os
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Callable

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from harness.assess import sweep as sweep_files
from harness.config import hydra_internals, schema
from harness.config.compose import (
    CONF_DIR,
    CONFIG_NAME,
    TRACKING_NODE,
    compose_jobs,
    one_line,
    quote_override,
    study_settings,
    to_run_config,
)
from harness.data import registry as datasets
from harness.launch import launchers, preflight, resume, signals, sweep_end
from harness.launch.plan import CommandPlan
from harness.launch.tracker import start as start_tracker
from harness.store import command_file, files, layout, sweep_file
from harness.studies import registry
from harness.tracking import settings

EXIT_OK, EXIT_FAILED_RUNS, EXIT_INVALID = 0, 1, 2  # interrupted: 128 + the signal (130 for Ctrl-C)

log = logging.getLogger("harness")


def plan_command(overrides: list[str], multirun: bool, config_name: str = CONFIG_NAME) -> CommandPlan:
    """Compose and validate every job of the command, a study's computed jobs included: the one plan that sweep.json
    records and Hydra's sweeper and launcher run; raises ConfigError or a Hydra error on the first bad one."""
    from harness.launch.resources import visible_gpus

    folders = hydra_internals.searchpath(overrides)
    preflight.check_searchpath(folders)
    user_studies = registry.user_paths(folders)  # a user's own studies, beside their presets (--config-dir)
    composed = compose_jobs(overrides, multirun, config_name, lambda name: registry.find(name, user_studies))
    output_dir = composed.output_dir
    # a single run's "sweep" is the folder above it: sweeps/<id>/0 logs to sweeps/mlflow.db, experiment <id>
    tracking = None if composed.tracking is None else settings.from_dict(
        composed.tracking, output_dir if multirun else output_dir.parent)
    launcher = launchers.traits(str(composed.launcher.get("_target_", "")))
    if multirun and launcher.check_config is not None:
        launcher.check_config(composed.launcher)
    if not launcher.remote:  # a remote launcher's GPUs are not this machine's
        preflight.check_devices(composed.run_configs, visible_gpus(),
                                ids_applied=bool(os.environ.get("HARNESS_GPUS_ASSIGNED")))
    preflight.check_existing_runs(composed.jobs, composed.run_configs, output_dir, multirun)
    return CommandPlan(composed.jobs, output_dir, launcher, composed.run_configs, composed.study, tracking,
                       composed.study_name, [str(path) for path in user_studies] if composed.study_name else [])


@contextmanager
def output_folder_lock(folder: Path, key: str):
    """Hold the command's output folder while it runs: a second command there would run the same runs at once,
    each rewriting the other's files, so it is refused (exit 2)."""
    with ExitStack() as held:
        try:
            held.enter_context(files.folder_lock(folder))
        except files.FolderBusy as busy:
            raise schema.ConfigError(
                key, str(folder), f"a folder no other harness command is running in (process {busy} is running in "
                "this one); wait for it to end, or choose another folder") from None
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
                raise  # the machine's fault, not the command's: exit 1 (main)
            raise schema.ConfigError(key, str(folder), f"a folder this user can write ({err.strerror})") from None
        yield


def hydra_job(cfg: DictConfig) -> float | None:
    """One job (Hydra's task function): validate, train, and record a failure instead of ending the sweep; returns
    the run's final val_acc, the tracked metric a Hydra sweeper optimises (None when the run failed)."""
    from harness.run import slurm
    from harness.run.experiment import run_experiment

    hydra_cfg = HydraConfig.get()
    name = hydra_cfg.runtime.choices.get("study")
    run_cfg = to_run_config(cfg, name)
    # what its runs do beside training (+study=diagnose: the first job checks the data)
    study = registry.find(name, registry.user_paths(hydra_cfg.searchpath))
    hooks = study.run_hooks(study.settings(study_settings(cfg, name))) if study is not None else []
    run_dir = Path(hydra_cfg.runtime.output_dir)
    run_id = f"{run_dir.parent.name}/{run_dir.name}"
    tracking_cfg = study_settings(cfg, TRACKING_NODE)
    tracking = None if tracking_cfg is None else settings.from_dict(tracking_cfg, run_dir.parent)
    try:
        return run_experiment(run_cfg, run_dir, run_id=run_id, overrides=list(hydra_cfg.overrides.task),
                              hooks=hooks,
                              tracking=tracking)
    except Exception as err:
        from harness.run.devices import out_of_memory_hint

        if slurm.out_of_requeues(err):
            log.warning("run %s did not finish: %s", run_id, slurm.OUT_OF_REQUEUES)
        elif out_of_memory_hint(err):
            log.error("run %s failed: %s (details in %s)", run_id, out_of_memory_hint(err), run_dir / layout.RUN_FILE)
        else:
            log.error("run %s failed: %s: %s (details in %s)", run_id, type(err).__name__, err,
                      run_dir / layout.RUN_FILE)
        return None


def main(argv: list[str] | None = None, *, process_ends: bool = False) -> int:
    """`python -m harness [overrides] [-m]`; returns the exit code. Flags may come anywhere among overrides. A
    signal between the stages that say what it stopped (the planning, the runs, the report) gets one line too;
    `process_ends` (harness/__main__.py): once the command has ended, a signal has nothing left to stop."""
    try:
        try:
            return _command(argv)
        finally:  # what follows is the process's end (its logs flushed): a signal there has nothing to stop
            if process_ends:
                signals.hold()
    except KeyboardInterrupt as err:  # found by the SIGTERM stress test: a traceback and exit code 1
        code, name = signals.exit_code(err)
        print(f"harness: interrupted ({name}); run the command again: it goes on from the files written",
              file=sys.stderr)
        return code


def _command(argv: list[str] | None) -> int:
    parser = hydra_internals.args_parser()
    parser.prog = "python -m harness"
    typed = list(sys.argv[1:] if argv is None else argv)  # the command as typed: what a resume runs again
    args = parser.parse_intermixed_args(typed)
    signals.install()
    if args.config_dir is not None:  # the user's own configs: searched after the built-in ones, in every job
        folder = Path(args.config_dir).expanduser().resolve()
        args.overrides = [*args.overrides, f"hydra.searchpath=[{quote_override('file://' + str(folder))}]"]
        args.config_dir = None
    if any(getattr(args, flag) for flag in ("help", "hydra_help", "cfg", "info", "shell_completion")):
        _run_hydra(parser, args)
        return EXIT_OK
    folder_key = "hydra.sweep.dir" if args.multirun else "hydra.run.dir"
    tracker = None  # with tracking=mlflow, the sweep's tracking process
    with ExitStack() as held:
        try:
            plan = plan_command(args.overrides, args.multirun, args.config_name or CONFIG_NAME)
            earlier = None if _names_folder(args.overrides, folder_key) or not args.multirun else \
                resume.unfinished_sweep(plan.output_dir.parent, typed, Path.cwd())
            if earlier is not None:  # the same command again: its unfinished sweep, not a new one
                print(f"harness: resuming {earlier}, this same command's unfinished sweep (a new one: "
                      f"{folder_key}=...)", file=sys.stderr)
                args.overrides = [*args.overrides, f"{folder_key}={quote_override(str(earlier))}"]
                plan = plan_command(args.overrides, args.multirun, args.config_name or CONFIG_NAME)
            for note in dict.fromkeys(filter(None, (datasets.input_note(c.data) for c in plan.run_configs))):
                print(f"harness: warning: {note}", file=sys.stderr)
            held.enter_context(output_folder_lock(plan.output_dir, folder_key))
            if _command_folder(plan.output_dir, args.multirun) == plan.output_dir:  # not a sweep's job
                command_file.write_once(plan.output_dir, command_file.for_this_process(typed, args.multirun))
            if args.multirun:  # the plan Hydra's sweeper and launcher run, and what the report and a resume read
                plan.write()
                if plan.tracking is not None:  # the sweep's parent run, before any run starts
                    tracker = start_tracker(plan.output_dir, plan.tracking, len(plan.jobs), plan.launcher)
        except schema.ConfigError as err:
            print(f"harness: error: {err}", file=sys.stderr)
            return EXIT_INVALID
        except (HydraException, OmegaConfBaseException) as err:
            print(f"harness: error: {one_line(err, args.overrides)}", file=sys.stderr)
            return EXIT_INVALID
        except OSError as err:  # a full disk or a read-only folder: nothing can be recorded
            print(f"harness: error: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
            return EXIT_FAILED_RUNS
        except KeyboardInterrupt as err:  # a signal while the command planned: no run had started (_run: after)
            code, name = signals.exit_code(err)
            print(f"harness: interrupted ({name}) while planning, before any run started: run the command again",
                  file=sys.stderr)
            return code
        # Hydra would resolve the folder's ${now:...} again: pin it to the one checked and locked here
        args.overrides = [*args.overrides, f"{folder_key}={quote_override(str(plan.output_dir))}"]
        return _run(args, plan.output_dir, lambda: _run_hydra(parser, args), tracker)


def run_planned_job(argv: list[str]) -> int:
    """`python -m harness ARGS` for a job of a sweep the command planned, in its warm worker (harness.worker); the
    exit code. The command composed and validated every job before any ran (sweep.json holds the plan), so the job
    goes to Hydra's run at once: not planned again (three compositions, about 0.55 s), nor asked its mode (one
    more); it runs as `main` would run it, with the same files. ARGS: the launcher's (its overrides, hydra.run.dir
    in a folder holding sweep.json); any other arguments (a flag, no such folder) take `main`'s whole path."""
    parser = hydra_internals.args_parser()
    args = parser.parse_intermixed_args(argv)
    folders = [o.value() for o in OverridesParser.create().parse_overrides(args.overrides)
               if o.key_or_group == "hydra.run.dir"]
    flags = [name for name in ("help", "hydra_help", "cfg", "info", "shell_completion", "multirun", "config_dir")
             if getattr(args, name)]
    if flags or len(folders) != 1 or not (Path(folders[0]).parent / layout.SWEEP_FILE).exists():
        return main(argv)
    output_dir = Path(folders[0])
    signals.install()
    with ExitStack() as held:
        try:
            held.enter_context(output_folder_lock(output_dir, "hydra.run.dir"))
        except schema.ConfigError as err:
            print(f"harness: error: {err}", file=sys.stderr)
            return EXIT_INVALID
        except OSError as err:
            print(f"harness: error: cannot write {err.filename}: {err.strerror}", file=sys.stderr)
            return EXIT_FAILED_RUNS
        return _run(args, output_dir, lambda: hydra_internals.run_job(args.overrides, hydra_job, str(CONF_DIR),
                                                                      CONFIG_NAME))


def _command_folder(output_dir: Path, multirun: bool) -> Path:
    """The folder whose command.json resumes this command: its own, or for a job a sweep's launcher started (a
    single run into a folder of a sweep.json), the sweep's."""
    if not multirun and (output_dir.parent / layout.SWEEP_FILE).exists():
        return output_dir.parent
    return output_dir


def _names_folder(overrides: list[str], folder_key: str) -> bool:
    return any(override.startswith(f"{folder_key}=") for override in overrides)


def _run_hydra(parser, args) -> None:
    hydra_internals.run_hydra(args, parser, hydra_job, str(CONF_DIR), CONFIG_NAME)


def _run(args, output_dir: Path, run_hydra: Callable[[], None], tracker=None) -> int:
    """Hand the validated command to Hydra (`run_hydra`); the exit code from what the runs' files say. A multirun's
    end (the report, the tracking process's end: harness.launch.sweep_end.close) follows it, interrupted or not."""
    resume_line = command_file.resume_line(_command_folder(output_dir, args.multirun))
    stopped_before = _stopped(output_dir) if args.multirun else None
    try:
        run_hydra()
    except KeyboardInterrupt as err:  # Ctrl-C, SIGTERM, SIGUSR2 (harness.launch.signals)
        code, name = signals.exit_code(err)
        print(f"harness: interrupted ({name}); resume with: {resume_line}", file=sys.stderr)
        if args.multirun and output_dir.exists():
            return _ended(lambda: sweep_end.close(output_dir, tracker, interrupted=True), output_dir, code)
        return code
    if args.multirun:
        failed, unfinished = sweep_files.failed_runs(output_dir), sweep_files.unfinished_runs(output_dir)
    else:
        failed, unfinished = sweep_files.run_outcome(output_dir)
    if failed:
        print(f"harness: {len(failed)} run(s) failed: {', '.join(failed)}", file=sys.stderr)
    if unfinished:
        print(f"harness: {len(unfinished)} run(s) did not finish: {', '.join(unfinished)}", file=sys.stderr)
    if failed or unfinished:
        print(f"harness: {'run them again' if failed and not unfinished else 'resume'} with: {resume_line}",
              file=sys.stderr)
    code = EXIT_FAILED_RUNS if failed or unfinished else EXIT_OK
    stopped = _stopped(output_dir) if args.multirun else None
    if stopped is not None and stopped != stopped_before:  # a study's round it could not plan: the study ended
        print(f"harness: error: {stopped}", file=sys.stderr)
        code = EXIT_INVALID
    if args.multirun:
        print(f"sweep: {output_dir}")
        return _ended(lambda: sweep_end.close(output_dir, tracker, interrupted=False), output_dir, code)
    print(f"run: {output_dir}")
    return code


def _stopped(output_dir: Path) -> str | None:
    """Why the sweep's study planned no more rounds, where one could not be planned (harness.launch.rounds)."""
    return sweep_file.stopped(sweep_file.read(output_dir)) if (output_dir / layout.SWEEP_FILE).exists() else None


def _ended(close: Callable[[], None], output_dir: Path, code: int) -> int:
    """The sweep's end (its report), which a signal may interrupt too: then one line, the signal's exit code and no
    traceback; the runs' files are all written, and the report is built from them."""
    try:
        close()
    except KeyboardInterrupt as err:
        signalled, name = signals.exit_code(err)
        print(f"harness: interrupted ({name}) while writing the report; the runs' files are complete: build it with "
              f"python -m harness.report {output_dir}", file=sys.stderr)
        return signalled
    return code
