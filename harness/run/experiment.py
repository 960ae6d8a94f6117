"""One training run, composed from the stages: seed, devices, data (harness.run.inputs), model, fit, files."""
from __future__ import annotations

import logging
import math
import os
import platform
import time
from pathlib import Path

from harness import backend
from harness.config.batching import BatchPlan, Schedule, plan_batches, plan_schedule
from harness.config.diagnose import Settings
from harness.config.schema import RunConfig
from harness.data import registry as data
from harness.data.transforms import Arrays
from harness.probes import in_run as probes
from harness.run import checkpoint, slurm
from harness.run.inputs import prepare_data, training_inputs
from harness.run.tensorboard_log import RunBoard
from harness.store import layout
from harness.store.files import remove_partial_writes
from harness.store.layout import METRICS_FILE
from harness.store.run_files import (
    FINISHED,
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


_runs_in_process: list[str] = []  # run folders this process has trained before (a warm worker's earlier jobs)


def run_experiment(cfg: RunConfig, run_dir: Path, *, run_id: str, overrides: list[str] = (),
                   data_checks: Settings | None = None, tracking: Tracking | None = None) -> float:
    """Train one configuration, write metrics.parquet and run.json into `run_dir`, return the final val_acc.
    `data_checks`: a diagnosis's settings, for the run that checks the data before it trains (harness.run.suspects).
    `tracking`: also log the run to MLflow as it trains (harness.tracking.live).

    run.json says `running` from the start; its final status (completed, diverged, failed, interrupted) is
    written however the run ends. Exceptions are re-raised after they are recorded. A folder that already holds
    this run is resumed: a finished run is left alone, an interrupted or killed one continues from its last
    checkpointed epoch (`resumed_from_epoch` in run.json).
    """
    run_dir = Path(run_dir)
    config = recorded_config(cfg.flat())
    previous, damage = inspect_run(run_dir)
    if previous is not None and previous.get("config") != config:
        raise ValueError(f"{run_dir} holds the files of another run ({' '.join(previous.get('overrides', []))})")
    if damage is None and previous is not None and previous["status"] in FINISHED:
        log.info("run %s already %s: left as it is", run_id, previous["status"])
        return final_val_acc(run_dir)
    remove_partial_writes(run_dir)
    resume_epoch, notes = _resume_point(run_dir, previous, damage)
    record = RunRecord(run_dir, run_id, config, list(overrides),
                       resumed_from_epoch=resume_epoch or None, previous=previous, notes=notes)
    inputs_note = data.input_note(cfg.data)  # the inputs' scale, when it is suspect (harness.data.checks)
    if inputs_note:
        record.update(inputs=inputs_note)
    board = RunBoard(run_dir, run_id, config_columns(cfg.flat()))  # TensorBoard's view of the same run, in tb/
    tracker = open_tracker(tracking, run_dir, record)  # MLflow's, with tracking=mlflow
    record.set_environment(pid=os.getpid(), earlier_runs_in_process=len(_runs_in_process))
    _runs_in_process.append(str(run_dir))
    status, error = "failed", None
    try:
        with slurm.preemption(record):
            result, diverged = _train(cfg, run_dir, run_id, record, board, tracker, resume_epoch, data_checks)
        status = "diverged" if diverged else "completed"
        return result
    except (KeyboardInterrupt, SystemExit) as err:  # Ctrl-C, SIGTERM, or submitit's requeue before a time limit
        status, error = "interrupted", err
        if isinstance(err, SystemExit) and os.environ.get("SLURM_JOB_ID"):
            record.data.setdefault("notes", []).append(slurm.REQUEUED)
        raise
    except BaseException as err:
        error = err
        if slurm.out_of_requeues(err):
            status = "interrupted"
            record.data.setdefault("notes", []).append(slurm.OUT_OF_REQUEUES)
        raise
    finally:
        record.set_environment(**backend.tensorflow_loaded_on_jax())
        record.finish(status, error)
        board.finish(status)
        tracker.finish()



def _resume_point(run_dir: Path, previous: dict | None, damage: str | None) -> tuple[int, list[str]]:
    """The epoch to continue after, and notes on damaged files of the earlier attempt: a checkpoint, run.json or
    metrics.parquet that cannot be read sends the run back to epoch 0 (its stale rows dropped), with a warning."""
    if previous is None and damage is None:
        return 0, []
    try:
        if damage is None:
            return checkpoint.saved_epoch(run_dir), []
    except Exception as err:  # a truncated or foreign checkpoint.npz
        damage = f"{run_dir / layout.CHECKPOINT} cannot be read ({type(err).__name__}: {err})"
    note = f"{damage}: the run started again from epoch 0"
    log.warning(note)
    checkpoint.remove(run_dir)
    (run_dir / METRICS_FILE).unlink(missing_ok=True)
    return 0, [note]


def _train(cfg: RunConfig, run_dir: Path, run_id: str, record: RunRecord, board: RunBoard,
           tracker: RunTracker, resume_epoch: int, data_checks: Settings | None) -> tuple[float, bool]:
    placement = _place(cfg, record)  # the backend loads from here on
    from harness.backend import keras, ops
    from harness.data.decode import decoder
    from harness.models import registry as models
    from harness.run import suspects, target, train

    data_in = prepare_data(cfg)
    if data_checks is not None:
        suspects.check_once(cfg, data_in, run_dir, data_checks)
    if data_in.classes is not None:
        record.set_environment(classes=data_in.classes)  # label k's name in the user's data
    # Seed after loading: generating MNIST-1D reseeds the global numpy and python generators.
    keras.backend.clear_session()  # jobs of an in-process multirun start from a clean slate
    ops.seed(cfg.train.seed)
    plan = plan_batches(cfg.train.batch_size, cfg.train.per_replica_batch, placement.replicas, len(data_in.y_train),
                        cfg.train.steps_per_execution, check_target=cfg.train.target_tune_acc is not None,
                        backend=cfg.device.backend, host_devices=cfg.device.jax_host_devices)
    models.check_replicas(cfg.model, plan.replicas, plan.per_replica_batch_size, cfg.device.backend)
    model_cfg = models.replica_model(cfg.model, plan.replicas, plan.per_replica_batch_size, cfg.device.backend)
    schedule = plan_schedule(plan, cfg.train)
    _log_plan(run_id, plan, schedule, resume_epoch)

    with placement.scope():
        model = models.build(model_cfg, data_in.input_shape, data_in.num_classes)
        train.compile_model(model, cfg.train.optimizer, train.learning_rate(schedule.peak_lr, schedule.warmup_steps),
                            plan.steps_per_execution)
        if resume_epoch:
            checkpoint.restore(model, run_dir)
    record.update(trainable_params=suspects.trainable_parameters(model))

    epoch_probes = _epoch_probes(cfg, run_dir, model, data_in, resume_epoch)
    precise = _precise_bn(model_cfg, model, data_in, placement.replicas)
    table = MetricsTable(run_dir, keep_epochs=resume_epoch)
    board.start(table.rows)
    tracker.start(table.rows, resume_epoch)
    columns = {"run_id": run_id, **config_columns(cfg.flat()), "peak_lr": schedule.peak_lr, **plan.as_columns(),
               "num_classes": data_in.num_classes}
    if data_in.y_tune is not None:
        columns["tune_size"] = len(data_in.y_tune)

    def on_row(row: dict) -> None:
        table.append(row)
        board.add_epoch(row)
        record.update(epochs_completed=row["epoch"])
        tracker.add_epoch(row)

    train_eval, val_inputs, batches, tune_eval = training_inputs(cfg, data_in, plan, schedule, resume_epoch)
    recorder = train.EpochRecorder(train_eval, val_inputs, data_in.y_val, len(data_in.y_train), plan.global_batch_size,
                                   columns, on_row, rows=table.rows, target_train_loss=cfg.train.target_train_loss,
                                   extra_columns=epoch_probes, tune_eval=tune_eval, precise_bn=precise)
    monitor = _target_monitor(cfg, model, data_in, plan, tune_eval, val_inputs)
    fit_started = time.perf_counter()
    step_sync = [train.StepSync()] if cfg.device.jax_host_devices else []  # one step in flight (config.batching)
    with placement.training():
        train.fit(model, batches, plan, schedule.epochs,
                  [*step_sync, *([monitor] if monitor else []), recorder,
                   checkpoint.callback(run_dir, model, then=tracker.flush)],
                  initial_epoch=resume_epoch)
    record.update(fit_seconds=time.perf_counter() - fit_started, target_reached_at_epoch=recorder.target_reached_at)
    if monitor is not None:
        record.update(**target.write(run_dir, monitor))
    if cfg.train.probes and not recorder.diverged:
        probes.save_weights(run_dir / layout.FINAL_WEIGHTS, model)
        probes.write_final_probes(run_dir, _probe_model(model_cfg, model, data_in, placement.replicas),
                                  data_in.x_train, data_in.y_train, decoder(data_in.decode), cfg.train.probe_samples)
    checkpoint.remove(run_dir)  # kept until the probes are written: a run killed during them resumes there
    return (recorder.rows[-1]["val_acc"] if recorder.rows else float("nan")), recorder.diverged


def _epoch_probes(cfg: RunConfig, run_dir: Path, model, data_in: Arrays, resume_epoch: int):
    """The per-epoch probes (None with probes=false); the initial weights are saved before the first epoch, so a
    resumed run measures its distance from the same start."""
    if not cfg.train.probes:
        return None
    from harness.data.decode import decoder

    path = run_dir / layout.INITIAL_WEIGHTS
    if not resume_epoch or not path.exists():
        probes.save_weights(path, model)
    weights, trainable = probes.load_weights(path)
    initial = [w for w, t in zip(weights, trainable) if t]
    return probes.EpochProbes(model, data_in.x_train, data_in.y_train, decoder(data_in.decode),
                              cfg.train.seed, initial)


def _target_monitor(cfg: RunConfig, model, data_in: Arrays, plan, tune_eval, val_inputs):
    """The within-epoch check of target_tune_acc (harness.run.target), or None without a target."""
    if cfg.train.target_tune_acc is None:
        return None
    from harness.data.decode import decoder
    from harness.run import target, train

    at_target = target.measure_at_target(model, lambda: train.validation_metrics(model, val_inputs, data_in.y_val),
                                         data_in.x_train, data_in.y_train, decoder(data_in.decode), cfg.train.seed)
    return target.TargetMonitor(cfg.train.target_tune_acc, tune_eval, plan, at_target)


def _precise_bn(model_cfg, model, data_in: Arrays, replicas: int):
    """The batch-norm statistics recomputed after every epoch (harness.run.precise_bn), for a model with batch norm;
    None for a model without, which gets no columns and pays nothing."""
    from harness.data.decode import decoder
    from harness.run import precise_bn

    if not precise_bn.batch_norm_layers(model):
        return None
    twin = _probe_model(model_cfg, model, data_in, replicas) if replicas >= 2 else None
    return precise_bn.PreciseBatchNorm(model, data_in.x_train, data_in.y_train, decoder(data_in.decode),
                                       twin=twin)


def _probe_model(model_cfg, model, data_in: Arrays, replicas: int):
    """The trained model for the end-of-run probes: a single-device twin under data parallelism (built outside the
    strategy's or the distribution's scope), whose plain variables the probes can move and differentiate twice."""
    if replicas < 2:
        return model
    from harness.models import registry as models

    twin = models.build(model_cfg, data_in.input_shape, data_in.num_classes)
    twin.set_weights(model.get_weights())
    return twin


def _place(cfg: RunConfig, record: RunRecord):
    """Load the backend, choose the devices (and on TensorFlow the strategy), and record where the run trains."""
    from harness.models import registry as models
    from harness.run import devices

    intra_op, inter_op = cpu_threads(cfg)
    if cfg.device.backend == "jax":
        simulated = cfg.device.jax_host_devices
        if simulated:
            devices.simulate_jax_devices(cfg.device.gpus)
        backend.select("jax", cpu_only=cfg.device.gpus == 0 or simulated)
        if not simulated:  # host devices run side by side and meet in every step's all-reduce: XLA's own threads
            devices.limit_xla_threads(intra_op)
        # Under the harness launcher, CUDA_VISIBLE_DEVICES already holds exactly the GPUs `devices` names.
        explicit = None if os.environ.get("HARNESS_GPUS_ASSIGNED") else cfg.device.devices
        placement = devices.jax_placement(cfg.device.gpus, explicit, cfg.device.simulate_devices)
        threads = {"intra_op": None if simulated else intra_op, "xla_flags": os.environ.get("XLA_FLAGS", "")}
    else:
        backend.select("tensorflow")
        from harness.backend import tf

        # Under the harness launcher, CUDA_VISIBLE_DEVICES already holds exactly the GPUs `devices` names.
        explicit = None if os.environ.get("HARNESS_GPUS_ASSIGNED") else cfg.device.devices
        placement = devices.make_strategy(cfg.device.gpus, explicit, cfg.device.simulate_devices,
                                          intra_op_threads=intra_op, inter_op_threads=inter_op)
        threads = {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                   "inter_op": tf.config.threading.get_inter_op_parallelism_threads()}
    record.set_environment(
        **backend.ops.versions(), strategy=placement.strategy_name,
        replicas=placement.replicas, devices=placement.device_names, platform=platform.platform(),
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        simulated_devices=cfg.device.simulate_devices and placement.device_names[0].lstrip("/").startswith("cpu"),
        batchnorm=models.batchnorm_mode(cfg.model, placement.replicas, cfg.device.backend), cpu_threads=threads,
    )
    return placement


def _log_plan(run_id: str, plan: BatchPlan, schedule: Schedule, resume_epoch: int) -> None:
    log.info("run %s: %s; lr %.3g%s, %d epochs%s%s", run_id, plan.describe(), schedule.peak_lr,
             f" after {schedule.warmup_steps} warm-up steps" if schedule.warmup_steps else "", schedule.epochs,
             f" ({schedule.total_steps} steps)" if schedule.total_steps else "",
             f"; resuming after epoch {resume_epoch}" if resume_epoch else "")


SMALL_INPUT = 256  # numbers per sample below which one intra-op thread is fastest (measured on MNIST-1D)


def cpu_threads(cfg: RunConfig) -> tuple[int | None, int | None]:
    """The backend's (intra-op, inter-op) CPU threads for this run; None keeps its default.

    Tiny per-sample inputs get one intra-op thread: splitting ops that small over cores costs more than it saves
    (about 2x slower at batch 8 on MNIST-1D with 2 threads). HARNESS_THREADS, set by the launcher for CPU runs
    (the cores divided among the runs it runs at once), caps both, so parallel runs do not oversubscribe the
    cores; it never raises the one thread of a tiny input, whatever the size of the sweep.
    """
    value = os.environ.get("HARNESS_THREADS")
    cap = int(value) if value else None
    shape = data.input_shape(cfg.data)
    if cfg.device.gpus == 0 and shape is not None and math.prod(shape) < SMALL_INPUT:
        return 1, cap
    return cap, cap
