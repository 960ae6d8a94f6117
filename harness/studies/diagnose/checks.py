"""The diagnosis's checks, read from the sweep: the first job's data checks (data_checks.json: label_shift, order,
feature_shift), capacity from the small batch's runs, and the probes read beside remains (the top Hessian eigenvalue
and sharpness at b and in the steps arm)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.assess.sweep import Sweep
from harness.store.files import DamagedFile
from harness.studies.diagnose import data_checks
from harness.studies.diagnose.files import read_checks
from harness.studies.diagnose.settings import recorded

SHIFT_CHECKS = ("label_shift", "feature_shift")  # a capacity gap is not read as such when these are flagged
CHECKS = ("label_shift", "order", "feature_shift", "capacity")


def read(sweep: Sweep, finals: pd.DataFrame, plan: dict) -> tuple[list[dict], list[str]]:
    """(the first job's data checks and capacity from the small batch's runs, each once by name; notes on checks
    that did not run)."""
    found: dict[str, dict] = {}
    notes = ["The data checks have not run yet: the first job checks them before it trains."]
    for record in sweep.records:
        try:
            written = sweep.run_file(record["job"], read_checks)
        except DamagedFile as err:
            notes = [f"The data checks cannot be read: {err}."]
            continue
        if written is not None:
            found.update({c["name"]: c for c in written.get("checks", [])})
            notes = [f"The data checks failed: {written['error']}."] if written.get("error") else []
            break
    shifted = any(found.get(name, {}).get("flagged") for name in SHIFT_CHECKS)
    found["capacity"] = _capacity(sweep, finals, plan, shifted).as_dict()
    return [found[name] for name in CHECKS if name in found], notes


def _capacity(sweep: Sweep, finals: pd.DataFrame, plan: dict, shifted: bool):
    small, df = finals[finals["key"] == "b"], sweep.epochs
    last = df[df["job"].isin(small["job"]) & df["epoch"].notna()].sort_values("epoch").groupby("run_id").tail(1)
    gaps = (last["train_eval_acc"] - last["tune_acc"]).dropna().tolist() if "tune_acc" in last else []
    params = [r.get("trainable_params") for r in sweep.records if r["job"] in set(small["job"])]
    train_size = int(last["train_size"].iloc[0]) if len(last) else 0
    return data_checks.capacity(next((p for p in params if p), 0), train_size, gaps, shifted,
                             threshold=recorded(plan).capacity)


def evidence(sweep: Sweep, finals: pd.DataFrame, b: int, big: int, remains) -> list[str]:
    """Beside remains: the top eigenvalue and sharpness at b and in the steps arm (the same learning rate: a larger
    one alone lowers the top eigenvalue), where the probes ran."""
    measured = {}
    for key in ("b", "steps"):
        values = []
        for job in finals.loc[finals["key"] == key, "job"]:
            try:
                probes = sweep.probes(str(job))
            except DamagedFile:
                probes = None
            if probes and not probes.get("error"):
                values.append((probes.get("hessian_top_eigenvalue"), probes.get("sharpness")))
        if values:
            measured[key] = np.nanmean(np.array(values, dtype=float), axis=0)
    if len(measured) < 2:
        return []
    (eig_b, sharp_b), (eig_s, sharp_s) = measured["b"], measured["steps"]
    sharper = eig_s > eig_b
    if remains is None or remains.value is None or remains.value <= 0:
        reading = "remains shows no gap for curvature to explain"
    elif sharper:
        reading = "a sharper large-batch minimum beside a positive remains: the sharp-minima reading of the gap"
    else:
        reading = "a flatter large-batch minimum: the sharp-minima reading does not explain what remains"
    return [f"Beside remains, at the same learning rate and as many updates: the top Hessian eigenvalue is "
            f"{eig_b:.1f} at batch {b} and {eig_s:.1f} in the steps arm at batch {big} ({eig_s / eig_b:.2g}x); "
            f"Keskar's sharpness {sharp_b:.1f} and {sharp_s:.1f}; {reading}."]
