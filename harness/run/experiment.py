"""One training run, composed from the stages: seed, devices, data (harness.run.inputs), model, fit, files."""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from harness import backend
from harness.config.ramp import RunPlan, plan_run
from harness.config.recipe import RECIPE_DEFAULTS
from harness.config.schema import NOT_IDENTITY, RunConfig, check_phases
from harness.data import registry as data
from harness.data.transforms import Arrays
from harness.models import batch_norm
from harness.probes import in_run as probes
from harness.run import checkpoint, devices, slurm, stop
from harness.run import pause as paused
from harness.run.inputs import prepare_data, training_inputs
from harness.run.tensorboard_log import RunBoard
from harness.store import layout, sweep_file
from harness.store.files import remove_partial_writes
from harness.store.run_files import (
    DONE,
    MetricsTable,
    RunRecord,
    config_columns,
    final_val_acc,
    inspect_run,
    recorded_config,
)
from harness.tracking.live import RunTracker, open_tracker
from harness.tracking.settings import Tracking

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Run:
    """What every stage of one training run shares."""
    cfg: RunConfig
    run_dir: Path
    run_id: str
    record: RunRecord
    resume_epoch: int
    timings: dict  # where this attempt's time went, in seconds (run.json's `timings`)


_runs_in_process: list[str] = []  # run folders this process has trained before (a warm worker's earlier jobs)


def run_experiment(cfg: RunConfig, run_dir: Path, *, run_id: str, overrides: list[str] = (),
                   hooks: Sequence[Callable] = (), tracking: Tracking | None = None) -> float:
    """Train one configuration, write metrics.parquet and run.json into `run_dir`, return the final val_acc.
    `hooks`: a study's `hook(cfg, data_in, run_dir)`, called once the run holds its data, before it trains (a
    diagnosis's first run checks the data: harness.studies.diagnose.hooks).
    `tracking`: also log the run to MLflow as it trains (harness.tracking.live).

    run.json says `running` from the start; its final status (completed, diverged, failed, interrupted, paused) is
    written however the run ends. Exceptions are re-raised after they are recorded. A folder that already holds
    this run is resumed: a finished or paused run is left alone, an interrupted or killed one continues from its
    last checkpointed epoch (`resumed_from_epoch` in run.json). With pause_epoch the run stops after that epoch,
    keeping its checkpoint (`paused`, `paused_at_epoch`): harness.store.fork copies it for a job that continues it.
    """
    run_dir = Path(run_dir)
    config = recorded_config(cfg.identity())
    previous, damage = inspect_run(run_dir)
    if previous is not None and previous.get("config") != config:
        raise ValueError(f"{run_dir} holds the files of another run ({' '.join(previous.get('overrides', []))})")
    if damage is None and previous is not None and previous["status"] in DONE:
        log.info("run %s already %s: left as it is", run_id, previous["status"])
        return final_val_acc(run_dir)
    remove_partial_writes(run_dir)
    resume_epoch, notes = checkpoint.resume_point(run_dir, previous, damage, sweep_file.runs_alone(run_dir))
    record = RunRecord(run_dir, run_id, config, list(overrides),
                       resumed_from_epoch=resume_epoch or None, previous=previous, notes=notes)
    record.update(recipe={k: getattr(cfg.train, k) for k in RECIPE_DEFAULTS})  # in force, defaults included
    inputs_note = data.input_note(cfg.data)  # the inputs' scale, when it is suspect (harness.data.validity)
    if inputs_note:
        record.update(inputs=inputs_note)
    board = RunBoard(run_dir, run_id, _config_columns(cfg))  # TensorBoard's view of the same run, in tb/
    tracker = open_tracker(tracking, run_dir, record)  # MLflow's, with tracking=mlflow
    record.set_environment(pid=os.getpid(), earlier_runs_in_process=len(_runs_in_process), **devices.launcher_share())
    _runs_in_process.append(str(run_dir))
    status, error, timings, loaded_before = "failed", None, {"start": time.time()}, backend.load_seconds()
    try:
        with slurm.preemption(record):
            result, status = _train(_Run(cfg, run_dir, run_id, record, resume_epoch, timings), board, tracker, hooks)
        return result
    except (KeyboardInterrupt, SystemExit) as err:  # Ctrl-C, SIGTERM, or submitit's requeue before a time limit
        status, error = "interrupted", err
        stop.clear()
        if isinstance(err, SystemExit) and os.environ.get("SLURM_JOB_ID"):
            record.data.setdefault("notes", []).append(slurm.REQUEUED)
        raise
    except BaseException as err:
        error = err
        if stop.requested is not None:  # a signal that a library turned into another exception on its way here
            status = "interrupted"  # (SIGINT during TensorFlow's import: ImportError "initialization failed")
            record.data.setdefault("notes", []).append(stop.reached_as(err))
            raise stop.interruption() from err  # what the worker and the launcher stop on
        hint = devices.out_of_memory_hint(err)
        if hint:  # a shared GPU's memory ran out: the setting to lower, in the record and the log line
            record.data.setdefault("notes", []).append(hint)
        if slurm.out_of_requeues(err):
            status = "interrupted"
            record.data.setdefault("notes", []).append(slurm.OUT_OF_REQUEUES)
        raise
    finally:
        record.set_environment(**backend.tensorflow_loaded_on_jax())
        record.update(timings={**timings, "import": backend.load_seconds() - loaded_before, "end": time.time()})
        record.finish(status, error)
        board.finish(status)
        tracker.finish()


def _train(run: _Run, board: RunBoard, tracker: RunTracker, hooks: Sequence[Callable]) -> tuple[float, str]:
    """The run's stages in order: devices, data, the batch plan, the model, what each epoch measures and where its
    row goes, fit, the end-of-run files. Returns (the final val_acc, the status: completed, diverged, or paused at
    pause_epoch)."""
    placement = devices.place(run.cfg, run.record)  # the backend loads from here on
    from harness.data.decode import decoder
    from harness.run import measures, phases, precise_bn, target, train
    from harness.run.measures import inference

    data_in = _data(run, hooks)
    decode = decoder(data_in.decode)  # image files to inputs (None for arrays), for every measurement
    planned = _plan(run, placement, data_in)
    model_cfg, model = _model(run, placement, data_in, planned)
    train_eval, val_inputs, phase_batches, tune_eval = training_inputs(run.cfg, data_in, placement.replicas)
    infer = inference(model, placement.replicas)  # one compiled function for every inference-mode pass
    settings = phases.PhaseSettings(model, planned, lambda phase: on_phase(phase))  # what each phase changes
    notes = run.record.data.setdefault("notes", [])
    notes.extend(note for note in settings.notes if note not in notes)  # a momentum the EMA rule clips, once
    kept = settings.track(_kept_statistics(run, model_cfg, model, data_in, decode, placement.replicas, infer))
    table = MetricsTable(run.run_dir, keep_epochs=run.resume_epoch)
    recorder = train.EpochRecorder(
        _columns(run, planned, data_in), _sinks(run, table, board, tracker),
        measures.of_run(run.cfg, run.run_dir, run.resume_epoch, model, data_in, decode, infer, train_eval,
                        val_inputs, tune_eval, lambda beside: settings.track(precise_bn.of_run(
                            model_cfg, model, data_in, decode, placement.replicas, infer, beside=beside)), kept),
        len(data_in.y_train), planned.first.global_batch_size, rows=table.rows, rate_of_step=planned.lr_at)
    divergence = train.StopOnDivergence(recorder.rows)
    at_loss = None if run.cfg.train.target_train_loss is None else train.StopAtTrainLoss(
        run.cfg.train.target_train_loss, recorder.rows)
    monitor = target.monitor(run.cfg, model, infer, data_in, decode, planned, tune_eval, val_inputs, kept)
    step_sync = train.StepSync() if run.cfg.device.jax_host_devices else None  # one step in flight (config.batching)

    def on_phase(phase) -> None:
        recorder.enter_phase({"peak_lr": phase.peak_lr, **phase.plan.as_columns()}, phase.plan.global_batch_size)
        if monitor is not None:
            monitor.enter_phase(phase.plan)

    fit_started, set_up = time.perf_counter(), time.time() - run.timings["start"]
    callbacks = [c for c in (step_sync, monitor, recorder, divergence, at_loss) if c is not None] + [
        checkpoint.callback(run.run_dir, model, then=lambda: (tracker.flush(), stop.check()))]
    pause = run.cfg.train.pause_epoch if (run.cfg.train.pause_epoch or 0) > run.resume_epoch else None  # a run
    # resumed past it had not paused there (pause_when=cheaper): it goes on to the end
    with placement.training():  # callbacks in order: the row, then what stops on it, then the checkpoint
        phases.fit_phases(model, planned, phase_batches, settings, callbacks, run.resume_epoch, pause)
        if pause is not None and paused.stopped(run.cfg.train, model, recorder.rows) and not paused.pays(
                run.cfg.train, recorder.rows[run.resume_epoch:], set_up, time.perf_counter() - fit_started,
                run.record):
            phases.fit_phases(model, planned, phase_batches, settings, callbacks, pause)  # on to the end, here
    run.record.update(fit_seconds=time.perf_counter() - fit_started,
                      target_reached_at_epoch=None if at_loss is None else at_loss.reached_at)
    run.timings.update(recorder.seconds)
    final = recorder.rows[-1]["val_acc"] if recorder.rows else float("nan")
    if pause is not None and paused.stopped(run.cfg.train, model, recorder.rows):
        run.record.update(paused_at_epoch=pause)  # its checkpoint stays, and no end-of-run file is written yet
        return final, "paused"
    _end_of_run(run, model, model_cfg, data_in, decode, placement.replicas, monitor, divergence.diverged)
    return final, "diverged" if divergence.diverged else "completed"


def _end_of_run(run: _Run, model, model_cfg, data_in: Arrays, decode, replicas: int, monitor, diverged: bool) -> None:
    """target.json (with a target), the final weights and the end-of-run probes (with probes on, unless it
    diverged); the checkpoint is removed last: a run killed during the probes resumes there."""
    if monitor is not None:
        from harness.run import target

        run.record.update(**target.write(run.run_dir, monitor))
    if run.cfg.train.probes and not diverged:
        started = time.perf_counter()
        probes.save_weights(run.run_dir / layout.FINAL_WEIGHTS, model)
        probes.write_final_probes(run.run_dir, devices.single_device(model_cfg, model, data_in, replicas),
                                  data_in.x_train, data_in.y_train, decode, run.cfg.train.probe_samples)
        run.timings["end_probes"] = time.perf_counter() - started
    checkpoint.remove(run.run_dir)


def _data(run: _Run, hooks: Sequence[Callable]) -> Arrays:
    """The run's data as it trains on it, handed to its study's hooks first (a diagnosis's first run checks it)."""
    data_in = prepare_data(run.cfg)
    for hook in hooks:
        hook(run.cfg, data_in, run.run_dir)
    if data_in.classes is not None:
        run.record.set_environment(classes=data_in.classes)  # label k's name in the user's data
    return data_in


def _plan(run: _Run, placement, data_in: Arrays) -> RunPlan:
    """The batch plan of each phase (global and per-replica batch, steps) and the schedule (epochs, learning rate,
    warm-up), the run's seed set (after loading: generating MNIST-1D reseeds the global numpy and python
    generators)."""
    from harness.backend import keras, ops

    cfg = run.cfg
    keras.backend.clear_session()  # jobs of an in-process multirun start from a clean slate
    ops.seed(cfg.train.seed)
    planned = plan_run(cfg.train, placement.replicas, len(data_in.y_train), cfg.device.backend,
                       cfg.device.jax_host_devices)
    check_phases(cfg.model, planned, cfg.device.backend)  # data known only once loaded (TFDS) are checked here
    _log_plan(run.run_id, planned, run.resume_epoch)
    return planned


def _model(run: _Run, placement, data_in: Arrays, planned: RunPlan):
    """(the model's config for its replicas, the model built and compiled in the placement's scope, its checkpoint
    restored on a resume)."""
    from harness.models import registry as models
    from harness.run import train

    from harness.run.learning_rate import learning_rate

    cfg, plan = run.cfg, planned.first
    model_cfg = models.replica_model(cfg.model, plan.replicas, plan.per_replica_batch_size, cfg.device.backend)
    with placement.scope():
        model = models.build(model_cfg, data_in.input_shape, data_in.num_classes)
        optimizer = train.make_optimizer(cfg.train, learning_rate(planned.schedule, planned), model)
        train.compile_model(model, optimizer, plan.steps_per_execution, cfg.train.label_smoothing,
                            data_in.num_classes)
        if run.resume_epoch:
            checkpoint.restore(model, run.run_dir)
    run.record.update(trainable_params=train.trainable_parameters(model))
    found = batch_norm.of_model(model)  # a user's model's layers are known once built
    run.record.set_environment(batch_norm=found.as_json(), batchnorm=models.batchnorm_mode(
        cfg.model, plan.replicas, cfg.device.backend, found.layers))
    return model_cfg, model


def _columns(run: _Run, planned: RunPlan, data_in: Arrays) -> dict:
    """What every metrics row of the run holds besides its measurements: its config, plan (its first phase's: each
    phase sets its own) and data's sizes."""
    columns = {"run_id": run.run_id, **_config_columns(run.cfg), "peak_lr": planned.schedule.peak_lr,
               **planned.first.as_columns(), "num_classes": data_in.num_classes}
    if data_in.y_tune is not None:
        columns["tune_size"] = len(data_in.y_tune)
    return columns


def _config_columns(cfg: RunConfig) -> dict:
    """The run's config as its rows' columns: pause_epoch, where it stops, is no column (a paused run's rows and those
    of the job that continues it are one run's)."""
    return config_columns({k: v for k, v in cfg.flat().items() if k not in NOT_IDENTITY})


def _sinks(run: _Run, table: MetricsTable, board: RunBoard, tracker: RunTracker):
    """Where each epoch's row goes: metrics.parquet, TensorBoard, run.json's epoch count, MLflow."""
    board.start(table.rows)
    tracker.start(table.rows, run.resume_epoch)

    def on_row(row: dict) -> None:
        table.append(row)
        board.add_epoch(row)
        run.record.update(epochs_completed=row["epoch"])
        tracker.add_epoch(row)

    return on_row


def _kept_statistics(run: _Run, model_cfg, model, data_in: Arrays, decode, replicas: int, infer):
    """The key precise_bn: its statistics recomputed and kept before each evaluation; a model without batch norm
    has none to recompute, which run.json's notes say."""
    samples = run.cfg.train.precise_bn
    from harness.run import precise_bn

    kept = None if samples is None else precise_bn.of_run(model_cfg, model, data_in, decode, replicas, infer, samples)
    if samples is not None and kept is None:
        run.record.data.setdefault("notes", []).append(f"precise_bn={samples}: the model has no batch-norm layers, "
                                                       "so nothing is recomputed")
    return kept


def _log_plan(run_id: str, planned: RunPlan, resume_epoch: int) -> None:
    schedule, plan = planned.schedule, planned.first
    later = ", ".join(f"{p.plan.global_batch_size} from epoch {p.start_epoch + 1}" for p in planned.phases[1:])
    log.info("run %s: %s%s; lr %.3g%s, %d epochs%s%s", run_id, plan.describe(), f"; then global batch {later}"
             if later else "", schedule.peak_lr,
             f" after {schedule.warmup_steps} warm-up steps" if schedule.warmup_steps else "", schedule.epochs,
             f" ({schedule.total_steps} steps)" if schedule.total_steps else "",
             f"; resuming after epoch {resume_epoch}" if resume_epoch else "")
