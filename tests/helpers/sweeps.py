"""Constructed sweep folders: run.json and metrics.parquet written as the harness writes them.

The config is the real composed default (`epochs=3`), as run.json records it, and every metrics row has the
columns harness.run.experiment writes: the config columns (runlog.config_columns), the batch plan (batching.plan_batches),
the peak learning rate (batching.plan_schedule) and the per-epoch metrics of train.EpochRecorder, with one
`val_recall_<k>` per class. Only the numbers are made up.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import shutil
from pathlib import Path

import pandas as pd

NUM_CLASSES = 10
ENVIRONMENT = {"python": "3.11.7", "host": "test-host", "tensorflow": "2.21.0", "keras": "3.15.1",
               "strategy": "_DefaultDistributionStrategy", "replicas": 1, "devices": ["/cpu:0"]}


@functools.lru_cache(maxsize=None)
def _composed_config() -> tuple:
    """The default config with epochs=3, composed by Hydra and validated, as run.json records it.

    Composed on first use, not at import: validating it reads the MNIST-1D class counts, which go to the test
    session's data cache (tests/conftest.py) only once the session has started.
    """
    from hydra import compose, initialize_config_dir

    from harness.config.compose import CONF_DIR, to_run_config
    from harness.store.run_files import recorded_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        run_cfg = to_run_config(compose("config", overrides=["epochs=3"]))
    return tuple(recorded_config(run_cfg.flat()).items())


def _composed_config_dict() -> dict:
    return dict(_composed_config())


def __getattr__(name: str):
    if name == "CONFIG":  # a fresh copy each time: tests may change it
        return _composed_config_dict()
    raise AttributeError(name)


def _train_config(cfg: dict):
    from harness.config.schema import TrainConfig

    return TrainConfig(**{f.name: cfg[f.name] for f in dataclasses.fields(TrainConfig) if f.name in cfg})


@functools.lru_cache(maxsize=None)
def _train_size(overrides: tuple[str, ...]) -> int:
    """The training-set size a run of this config trains on: the config composed and validated as for a run,
    then sized by the harness's own arithmetic (the transforms' class counts)."""
    from hydra import compose, initialize_config_dir

    from harness.config.compose import CONF_DIR, to_run_config
    from harness.data.registry import expected_train_size

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        run_cfg = to_run_config(compose("config", overrides=list(overrides)))
    train = run_cfg.train
    return expected_train_size(run_cfg.data, train.imbalance, train.train_fraction, train.tune_fraction)


def _override(key: str, value) -> str:
    return f"{key}={'null' if value is None else value}"


def metric_rows(run_id: str, cfg: dict, val, train_eval, tune=None, stale_bn: bool = False,
                running=None) -> list[dict]:
    """The rows harness.run.experiment writes for a run of `cfg` whose epochs ended at these accuracies (`tune`: the
    tuning slice's, with tune_fraction > 0; by default val_acc's). `stale_bn`: a model with batch norm whose
    weights reach these accuracies (the `*_precise_bn` columns) while its moving statistics still carry
    bn_initial_weight = momentum^step of their start, pulling the accuracies measured with them towards chance.
    `running`: the running train_acc per epoch (by default train_eval_acc - 0.02)."""
    from harness.config.batching import plan_batches, plan_schedule
    from harness.store.run_files import config_columns

    data_keys = [_override(k, v) for k, v in cfg.items() if k.startswith("dataset.")]
    if cfg["dataset"] != _composed_config_dict()["dataset"]:
        data_keys = []  # another data set than the default: its own defaults
    data_and_transforms = (f"dataset={cfg['dataset']}", *data_keys, _override("imbalance", cfg["imbalance"]),
                           _override("train_fraction", cfg["train_fraction"]))
    train_size = _train_size((*data_and_transforms, _override("tune_fraction", cfg["tune_fraction"])))
    plan = plan_batches(cfg["batch_size"], cfg["per_replica_batch"], max(cfg["gpus"], 1), train_size,
                        cfg["steps_per_execution"], check_target=cfg.get("target_tune_acc") is not None)
    schedule = plan_schedule(plan, _train_config(cfg))
    columns = {"run_id": run_id, **config_columns(cfg), "peak_lr": schedule.peak_lr, **plan.as_columns()}
    if cfg["tune_fraction"] > 0:
        columns["tune_size"] = _train_size(data_and_transforms) - train_size
        tune = val if tune is None else tune
    rows = []
    running = running if running is not None else [t - 0.02 for t in train_eval]
    for e, (v, t) in enumerate(zip(val, train_eval)):
        step = plan.steps_per_epoch * (e + 1)
        if schedule.total_steps is not None:
            step = min(step, schedule.total_steps)
        # the lr in effect after the epoch: RecipeSchedule (constant) at the optimizer's step count
        warmup = min(1.0, (step + 1) / schedule.warmup_steps) if schedule.warmup_steps else 1.0
        rows.append({
            **columns, "epoch": e + 1, "step": step, "train_loss": 1.0 / (e + 1), "train_acc": running[e],
            "train_eval_loss": 0.9 / (e + 1), "train_eval_acc": t, "val_loss": 1.1 / (e + 1), "val_acc": v,
            **{f"val_recall_{k}": v for k in range(NUM_CLASSES)},
            **({"tune_loss": 1.2 - tune[e], "tune_acc": tune[e]} if tune is not None else {}),
            "lr": schedule.peak_lr * warmup, "epoch_seconds": 1.5, "samples_per_second": 100.0 * cfg["batch_size"],
        })
        if stale_bn:
            rows[-1].update(_stale_statistics(rows[-1], cfg.get("model.bn_momentum") or 0.99))
    return rows


def _stale_statistics(row: dict, momentum: float) -> dict:
    weight = momentum ** row["step"]
    chance = 1.0 / NUM_CLASSES
    return {"train_eval_acc_precise_bn": row["train_eval_acc"], "train_eval_loss_precise_bn": row["train_eval_loss"],
            "val_acc_precise_bn": row["val_acc"], "val_loss_precise_bn": row["val_loss"], "bn_initial_weight": weight,
            "train_eval_acc": weight * chance + (1 - weight) * row["train_eval_acc"],
            "val_acc": weight * chance + (1 - weight) * row["val_acc"]}


def make_run(sweep: Path, job: int, *, status="completed", val=(0.5, 0.7, 0.8), train_eval=None, error=None,
             finished=True, overrides=None, tune=None, stale_bn=False, running=None, probe_scale=None, **config):
    """One run folder; `val` gives one val_acc per completed epoch (empty: no metrics file); `stale_bn`: see
    metric_rows; `probe_scale`: the per-epoch probe columns written with the rest, at this facet's scale (add_probes)."""
    cfg = {**_composed_config_dict(), **config}
    run_dir = sweep / str(job)
    run_dir.mkdir(parents=True)
    run_id = f"{sweep.name}/{job}"
    train_eval = train_eval if train_eval is not None else [min(v + 0.05, 1.0) for v in val]
    from harness.config.recipe import RECIPE_DEFAULTS

    identity = {k: v for k, v in cfg.items() if k not in RECIPE_DEFAULTS or v != RECIPE_DEFAULTS[k]}
    record = {  # as a run writes it: the recipe at its defaults is no part of its config (RunConfig.identity)
        "run_id": run_id, "status": status, "config": identity,
        "recipe": {k: cfg.get(k, default) for k, default in RECIPE_DEFAULTS.items()},
        "overrides": overrides if overrides is not None else [f"batch_size={cfg['batch_size']}", f"seed={cfg['seed']}"],
        "started_at": "2026-01-05T10:00:00+00:00",
        "finished_at": "2026-01-05T10:00:42+00:00" if finished else None,
        "epochs_completed": len(val),
        "resumed_from_epoch": None,
        "error": {"type": "OSError", "message": error, "traceback": "Traceback ..."} if error else None,
        "environment": dict(ENVIRONMENT),
    }
    if finished:
        record["peak_memory_mb"] = 512.0
        record["trainable_params"] = 52_138
    if status in ("completed", "diverged"):  # written once the fit ends
        record.update(fit_seconds=40.0, target_reached_at_epoch=None)
    (run_dir / "run.json").write_text(json.dumps(record, indent=2) + "\n")
    if val:
        frame = pd.DataFrame(metric_rows(run_id, cfg, val, train_eval, tune, stale_bn, running))
        if probe_scale is not None:
            _probe_columns(frame, probe_scale)
        frame.to_parquet(run_dir / "metrics.parquet", index=False)
    return run_dir


def batch_sweep(sweep: Path, finals: dict[int, list[float]], train_finals: dict[int, list[float]] | None = None,
                **config):
    """Completed runs: finals[batch] lists the final val_acc of each seed."""
    job = 0
    for batch, values in finals.items():
        for seed, final in enumerate(values):
            train = (train_finals or {}).get(batch, [min(final + 0.05, 1.0)] * len(values))[seed]
            make_run(sweep, job, batch_size=batch, seed=seed, val=(final - 0.2, final - 0.05, final),
                     train_eval=(train - 0.2, train - 0.05, train), **config)
            job += 1
    return sweep


def _synthetic_accuracy(cfg: dict, epochs: int) -> tuple[list[float], list[float], list[float]]:
    """Per-epoch (running train_acc, train_eval_acc, val_acc) with the effects the studies look for, made up but
    in the direction the literature reports, so every finding and verdict has something to say."""
    import math

    val = 0.93 - 0.03 * math.log2(cfg["global_batch_size"] / 8) if "global_batch_size" in cfg else 0.9
    train = val + 0.03
    if cfg.get("budget") == "steps":  # matched steps close most of the batch-size drop
        val, train = 0.92 - 0.01 * math.log2(cfg["batch_size"] / 8), 0.95
    if cfg.get("tune_fraction", 0) > 0:  # +study=tuned: validation is best at lr x (batch / 8)^0.75 (see _tune)
        val -= 0.1 * math.log10(cfg["lr_factor"] / (cfg["batch_size"] / 8) ** 0.75) ** 2
    if cfg["imbalance"] > 0:
        val, train = val - 0.3, 0.97
    if cfg["preprocess_mismatch"] != "none":
        val = 0.15
    if cfg.get("model.width", 1.0) > 1 and cfg["train_fraction"] < 1:
        val, train = 0.6, 0.99
    running = train - 0.02
    if not cfg["shuffle"]:
        running, train, val = 0.65, 0.12, 0.1
    noise = 0.01 * (cfg["seed"] - 1)
    ramp = [(e + 1) / epochs for e in range(epochs)]
    return ([min(1.0, running * r + noise) for r in ramp], [min(1.0, train * r + noise) for r in ramp],
            [max(0.0, val * r + noise) for r in ramp])


def _tune(cfg: dict, val: list[float]) -> list[float] | None:
    """The tuning slice's accuracy per epoch, for +study=tuned: best at lr x sqrt(batch / 8), where validation
    is best at lr x (batch / 8)^0.75, so a choice made on validation would differ at batch 128 (10x, not 4.64x)."""
    import math

    if cfg.get("tune_fraction", 0) <= 0:
        return None
    factor, batch = cfg["lr_factor"], cfg["batch_size"]
    shift = 0.1 * (math.log10(factor / (batch / 8) ** 0.75) ** 2 - math.log10(factor / (batch / 8) ** 0.5) ** 2)
    return [min(1.0, v + shift * (e + 1) / len(val)) for e, v in enumerate(val)]


@functools.lru_cache(maxsize=None)
def _command_plan(overrides: tuple[str, ...]):
    from harness.launch.cli import plan_command

    return plan_command(list(overrides), multirun=True)


def planned(overrides: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], ...], tuple]:
    """(each job's overrides, each job's RunConfig) as `python -m harness OVERRIDES -m` plans them, once per test
    process: planning composes every job with Hydra, seconds for the larger studies."""
    plan = _command_plan(tuple(overrides))
    return tuple(tuple(job) for job in plan.jobs), tuple(plan.run_configs)


def study_sweep(sweep: Path, *overrides: str, probes: bool = False) -> Path:
    """The runs of `python -m harness OVERRIDES -m` (e.g. "+study=causes") as constructed folders: the jobs and
    configs the real command would run, with made-up accuracies (see _synthetic_accuracy); a model with batch norm
    gets moving statistics that lag its weights (metric_rows's `stale_bn`). sweep.json is the command's own (with a
    diagnosis's plan), and a diagnosis's first job checks the real data as a run does (harness.studies.diagnose.hooks).
    `probes`: with the probes' files as add_probes adds them, each metrics file written once (1,000 runs: 12 s less)."""
    jobs, run_configs = planned(overrides)
    scales = _facet_scales({str(num): list(job) for num, job in enumerate(jobs)}) if probes else {}
    for num, (job, run_cfg) in enumerate(zip(jobs, run_configs)):
        run_dir = _made(sweep, num, list(job), run_cfg, scales.get(str(num)))
        if "diagnose.check_data=true" in job:
            _check_data(run_cfg, run_dir, _command_plan(tuple(overrides)).study["diagnose"]["settings"])
    (sweep / "sweep.json").write_text(json.dumps(_command_plan(tuple(overrides)).sweep_record()))
    if probes:  # the facets' scales were given to every run: each must have written its metrics
        assert all((sweep / name / "metrics.parquet").exists() for name in scales), "a run without metrics"
        add_probes(sweep, written=True)
    return sweep


def _check_data(run_cfg, run_dir: Path, settings: dict) -> None:
    from harness.run.inputs import prepare_data
    from harness.studies.diagnose.hooks import check_once
    from harness.studies.diagnose.settings import Settings

    check_once(run_cfg, prepare_data(run_cfg), run_dir, Settings(**settings))


def probe_values(batch: int, seed: int) -> dict:
    """A probes.json as the training side writes it, with made-up numbers: the larger batch's minimum is the
    sharper one, as Keskar et al. report."""
    eigenvalue = 20.0 * (batch / 8) ** 0.5 + seed
    return {"probe_samples": 2048, "hessian_top_eigenvalue": eigenvalue, "hessian_trace": 15.0 * eigenvalue,
            "trace_stderr": 0.3 * eigenvalue, "sharpness": eigenvalue / 2, "sharpness_5e-4": eigenvalue / 4,
            "eigen_error": 1e-6, "eigen_iterations": 15, "eigen_converged": True, "trace_vectors": 8,
            "trace_sketch": 15, "trace_converged": True, "hessian_products": 23, "sharpness_iterations": 5,
            "sharpness_5e-4_iterations": 4, "sharpness_converged": True, "probe_loss": 0.05, "seconds": 9.0,
            "error": None}


def _interpolation_curve(pair: str, small: tuple[str, int], large: tuple[str, int], alphas: int,
                         height: float) -> pd.DataFrame:
    """Loss and accuracy along the line between two solutions: a wide valley at α = 0, a narrow one at α = 1."""
    import numpy as np

    alpha = np.round(np.linspace(-1.0, 2.0, alphas), 6)
    barrier = 0.4 * height * np.sin(np.pi * alpha) ** 2
    train_loss = 0.05 + np.minimum(1.5 * alpha ** 2, 12.0 * height * (alpha - 1) ** 2) + barrier
    val_loss = train_loss + 0.25 + 0.1 * alpha
    return pd.DataFrame({"pair": pair, "small_run": small[0], "large_run": large[0], "small_batch": small[1],
                         "large_batch": large[1], "alpha": alpha, "train_loss": train_loss,
                         "train_acc": np.exp(-train_loss), "val_loss": val_loss, "val_acc": np.exp(-val_loss)})


def _facet(overrides: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(a run's overrides but its batch size, those but its seed too: its facet)."""
    key = tuple(o for o in overrides if not o.startswith(("batch_size=", "+")))
    return key, tuple(o for o in key if not o.startswith("seed="))


def _facet_scales(runs: dict[str, list[str]]) -> dict[str, float]:
    """Each run's facet scale, by its folder's name: 1, 1.3, 1.6, ... for the facets in the order of their first run
    among the folders sorted by name."""
    facets: dict[tuple, float] = {}
    return {name: facets.setdefault(_facet(runs[name])[1], 1 + 0.3 * len(facets)) for name in sorted(runs)}


def _probe_columns(frame: pd.DataFrame, scale: float) -> None:
    """The per-epoch probe columns of a run's metrics (a noise scale growing from ~40 to ~2,000, a distance growing
    like log(step)), at its facet's scale."""
    import numpy as np

    batch, seed = int(frame["global_batch_size"].iloc[0]), int(frame["seed"].iloc[0])
    epoch, last = frame["epoch"].to_numpy(dtype=float), max(frame["epoch"].max() - 1, 1)
    frame["grad_norm_sq"] = 1.0 / epoch
    frame["grad_trace_cov"] = (40.0 * 50.0 ** ((epoch - 1) / last) / epoch * (1 + 0.05 * seed) * scale
                               * (1 + 0.2 * np.log2(batch / 8)))
    frame["noise_scale"] = frame["grad_trace_cov"] / frame["grad_norm_sq"]
    frame["weight_distance"] = (2.0 * np.log1p(frame["step"].to_numpy(dtype=float)) + 0.2 * seed) * scale


def add_probes(sweep: Path, probes=probe_values, *, interpolation: bool = True, alphas: int = 31,
               written: bool = False) -> Path:
    """What probes=true adds to a constructed sweep: the per-epoch probe columns in every metrics.parquet (a
    noise scale growing from ~40 to ~2,000, a distance growing like log(step)), a probes.json per run
    (`probes(batch, seed)`; None writes none) and interpolation.parquet, pairing the smallest and the largest
    batch of runs whose overrides differ only in batch size. Each combination of the other overrides (a facet)
    gets its numbers scaled a little, so that facets' lines do not hide each other (`_facet_scales`). `written`: the
    metrics files hold the probe columns already (study_sweep's `probes`)."""
    records = {p.name: json.loads((p / "run.json").read_text()) for p in sweep.iterdir()
               if (p / "metrics.parquet").exists()}
    scales = _facet_scales({name: record["overrides"] for name, record in records.items()})
    groups: dict[tuple, list[tuple[str, int]]] = {}
    for name, scale in scales.items():
        run_dir, record = sweep / name, records[name]
        frame = pd.read_parquet(run_dir / "metrics.parquet", columns=None if not written else ["global_batch_size",
                                                                                               "seed"])
        batch, seed = int(frame["global_batch_size"].iloc[0]), int(frame["seed"].iloc[0])
        if not written:
            _probe_columns(frame, scale)
            frame.to_parquet(run_dir / "metrics.parquet", index=False)
        key = _facet(record["overrides"])[0]
        values = probes(batch, seed)
        if values is not None:
            values = {k: v * scale if k in ("hessian_top_eigenvalue", "hessian_trace", "sharpness") else v
                      for k, v in values.items()}
            (run_dir / "probes.json").write_text(json.dumps(values))
        groups.setdefault(key, []).append((record["run_id"], batch))
    curves = [_interpolation_curve(", ".join(key) or "all runs", min(runs, key=lambda r: r[1]),
                                   max(runs, key=lambda r: r[1]), alphas, 1 + 0.1 * n)
              for n, (key, runs) in enumerate(groups.items()) if len({b for _, b in runs}) > 1]
    if interpolation and curves:
        pd.concat(curves, ignore_index=True).to_parquet(sweep / "interpolation.parquet", index=False)
    return sweep


def next_round(sweep: Path, done: int) -> list:
    """The next round of a study planned in rounds (+study=recover) as the harness sweeper plans it after round
    `done` (harness.launch.rounds.plan_next, each job composed as a job is), and its runs made, as study_sweep makes
    them; returns the round's PlannedJobs ([] when the study has none left)."""
    from harness.launch import rounds

    return _planned_and_made(sweep, lambda run_config: rounds.plan_next(sweep, done, run_config))


def add_seeds(sweep: Path, count: int) -> list:
    """`python -m harness.resume SWEEP --add-seeds COUNT`'s jobs (harness.launch.added_seeds.add), planned into the
    sweep and their runs made as study_sweep makes them; returns the PlannedJobs added."""
    from harness.launch import added_seeds

    return _planned_and_made(sweep, lambda run_config: added_seeds.add(sweep, count, run_config))


def _planned_and_made(sweep: Path, plan) -> list:
    """The jobs `plan(compose)` plans, each composed as a job is, and their runs made."""
    from hydra import initialize_config_dir

    from harness.config.compose import CONF_DIR, CONFIG_NAME, job_composer, to_run_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="harness"):
        compose = job_composer(CONFIG_NAME, [])
        configs = {}

        def run_config(overrides):
            configs[tuple(overrides)] = to_run_config(compose(overrides))
            return configs[tuple(overrides)]

        jobs = plan(run_config)
    for job in jobs:
        forked = job.continues is not None and json.loads((sweep / job.job / "run.json").read_text())[
            "status"] == "interrupted"  # copied from the paused run (harness.store.fork): the run continues it
        if forked:
            shutil.rmtree(sweep / job.job)
        if not (sweep / job.job).exists():
            _made(sweep, job.num, list(job.overrides), configs[tuple(job.overrides)])
    return jobs


def _made(sweep: Path, num: int, overrides: list[str], run_cfg, probe_scale: float | None = None) -> Path:
    """The run of job `num` made up as study_sweep makes it: the accuracies of its config (_synthetic_accuracy);
    with pause_epoch, paused there (run.json's paused_at_epoch, a checkpoint file) as a run leaves it."""
    from harness.config.schema import NOT_IDENTITY
    from harness.store.run_files import recorded_config

    cfg = recorded_config({k: v for k, v in run_cfg.flat().items() if k not in NOT_IDENTITY})
    running, train, val = _synthetic_accuracy({**cfg, "global_batch_size": run_cfg.train.batch_size},
                                              run_cfg.train.epochs)
    pause = run_cfg.train.pause_epoch
    tune = _tune(cfg, val)
    if pause is not None:
        running, train, val, tune = (None if v is None else v[:pause] for v in (running, train, val, tune))
    run_dir = make_run(sweep, num, val=val, train_eval=train, overrides=overrides, tune=tune,
                       stale_bn=bool(cfg.get("model.batch_norm")), running=running, probe_scale=probe_scale,
                       status="completed" if pause is None else "paused", **cfg)
    if pause is not None:
        record = json.loads((run_dir / "run.json").read_text())
        (run_dir / "run.json").write_text(json.dumps({**record, "paused_at_epoch": pause}, indent=2) + "\n")
        (run_dir / "checkpoint.npz").write_bytes(b"weights after the paused epoch")
    return run_dir


def set_final(sweep: Path, job, **values) -> None:
    """Overwrite the last epoch's columns (val_acc=..., tune_acc=...) of the run in folder `job`."""
    path = sweep / str(job) / "metrics.parquet"
    frame = pd.read_parquet(path)
    for column, value in values.items():
        frame.loc[frame.index[-1], column] = value
    frame.to_parquet(path, index=False)
