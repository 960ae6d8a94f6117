"""Constructed sweep folders: run.json and metrics.parquet written as the harness writes them."""
import json
from pathlib import Path

import pandas as pd

CONFIG = {
    "batch_size": 32, "per_replica_batch": False, "epochs": 3, "lr": 0.001, "optimizer": "adam", "seed": 0,
    "shuffle": True, "imbalance": 0.0, "gpus": 0, "devices": None, "simulate_devices": False,
    "dataset": "mnist1d", "dataset.num_samples": 5000, "dataset.train_split": 0.8, "dataset.data_seed": 42,
    "model": "convnet", "model.width": 1.0, "model.batch_norm": False, "train_fraction": 1.0,
    "preprocess_mismatch": "none", "budget": "epochs", "budget_steps": None, "lr_scaling": "none",
    "warmup_epochs": 0.0,
}


def make_run(sweep: Path, job: int, *, status="completed", val=(0.5, 0.7, 0.8), train_eval=None, error=None,
             finished=True, overrides=None, **config):
    """One run folder; `val` gives one val_acc per completed epoch (empty: no metrics file)."""
    cfg = {**CONFIG, **config}
    run_dir = sweep / str(job)
    run_dir.mkdir(parents=True)
    run_id = f"{sweep.name}/{job}"
    train_eval = train_eval if train_eval is not None else [min(v + 0.05, 1.0) for v in val]
    record = {
        "run_id": run_id, "status": status, "config": cfg,
        "overrides": overrides if overrides is not None else [f"batch_size={cfg['batch_size']}", f"seed={cfg['seed']}"],
        "started_at": "2026-01-05T10:00:00+00:00",
        "finished_at": "2026-01-05T10:00:42+00:00" if finished else None,
        "epochs_completed": len(val),
        "error": {"type": "OSError", "message": error, "traceback": "Traceback ..."} if error else None,
        "environment": {"python": "3.11.7", "tensorflow": "2.21.0", "keras": "3.15.1",
                        "strategy": "_DefaultDistributionStrategy", "replicas": 1, "devices": ["/cpu:0"]},
    }
    (run_dir / "run.json").write_text(json.dumps(record))
    if val:
        steps = 4000 // cfg["batch_size"]
        rows = [{
            "run_id": run_id, "epoch": e + 1, "step": steps * (e + 1), "train_loss": 1.0 / (e + 1),
            "train_acc": t - 0.02, "train_eval_loss": 0.9 / (e + 1), "train_eval_acc": t, "val_loss": 1.1 / (e + 1),
            "val_acc": v, "lr": cfg["lr"], "epoch_seconds": 1.5, "samples_per_second": 100.0 * cfg["batch_size"],
            **{k: v2 for k, v2 in cfg.items() if k != "lr"}, "base_lr": cfg["lr"],
            "global_batch_size": cfg["batch_size"], "per_replica_batch_size": cfg["batch_size"], "replicas": 1,
            "train_size": 4000, "steps_per_epoch": steps,
        } for e, (v, t) in enumerate(zip(val, train_eval))]
        pd.DataFrame(rows).to_parquet(run_dir / "metrics.parquet", index=False)
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
