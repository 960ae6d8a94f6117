"""+study=diagnose: the drop in val_acc from the small batch b to the large batch B, split into its causes, and the
data checked for the other suspects. Files in, numbers and sentences out. The plan (sweep.json's `diagnose`, plan.py)
names each job's arm. Per seed, v is a run's final val_acc and v' the same with batch-norm statistics recomputed
for its final weights (v' = v without batch norm, and for class-sorted data, whose batch statistics are each one
class's); parts.py splits D = v(b) - v(B) into parts that add up to it, with paired t-intervals over the seeds
complete in every arm. The checks are the first job's data_checks.json (label_shift, order, feature_shift), and
capacity from b's runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.assess.analysis import BATCH, num_classes
from harness.assess.batchnorm import PRECISE
from harness.assess.levels import Level, shared_checks
from harness.assess.levels import reading as levels_reading
from harness.assess.sweep import Sweep
from harness.assess.verdicts import CHANCE_MARGIN, MIN_EFFECT
from harness.studies.diagnose import data_checks
from harness.store.files import DamagedFile
from harness.studies.diagnose import parts as diagnosis_parts
from harness.studies.diagnose.files import read_checks

AS_IS = "as_is"
SHIFT_CHECKS = ("label_shift", "feature_shift")  # a capacity gap is not read as such when these are flagged
CHECKS = ("label_shift", "order", "feature_shift", "capacity")
ARM_WORDS = {"steps": "as many updates as batch {b}", "lr": "the learning rate scaled from batch {b}",
             "ghost": "ghost batch norm in chunks of batch {b}'s"}


@dataclass
class Diagnosis:
    small_batch: int
    large_batch: int
    attribution: str
    ladder: list[str]                  # the ladder's arms in order (the arms the parts are read from)
    seeds: list[int]                   # the seeds complete in every arm: the parts' pairs
    drop: diagnosis_parts.Estimate | None
    parts: list[diagnosis_parts.Part]
    checks: list[dict[str, Any]]
    headline: str
    arm_values: dict[str, tuple[float, float]]  # b, B and each arm: mean (v, v') over the seeds that count
    notes: list[str] = field(default_factory=list)     # how to read the parts, and what the runs could not show
    evidence: list[str] = field(default_factory=list)  # the probes beside `remains`
    arm_weights: dict[str, float] = field(default_factory=dict)  # each arm's mean bn_initial_weight (NaN: none)
    level: str | None = None           # what both sizes lose to a cause they share, when it outweighs the drop

    def as_json(self) -> dict[str, Any]:
        """diagnosis.json's fields."""
        drop = self.drop or diagnosis_parts.estimate([])
        return {
            "small_batch": self.small_batch, "large_batch": self.large_batch, "headline": self.headline,
            "drop": {"value": drop.value, "low": drop.low, "high": drop.high},
            "parts": [{"name": p.name, "value": p.estimate.value, "low": p.estimate.low, "high": p.estimate.high,
                       "arm": p.arm, "reading": p.estimate.reading, "per_seed": list(p.estimate.per_seed)}
                      for p in self.parts],
            "ladder": self.ladder, "attribution": self.attribution, "seeds": self.seeds, "checks": self.checks,
            "notes": self.notes, "evidence": self.evidence, "level": self.level,
            "arm_values": [{"arm": arm, "batch": self.small_batch if arm == "b" else self.large_batch,
                            "val_acc": _number(v), "val_acc_precise_bn": _number(v_precise),
                            "bn_initial_weight": _number(self.arm_weights.get(arm, math.nan)),
                            "seeds": len(self.seeds)} for arm, (v, v_precise) in self.arm_values.items()],
        }


def _number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def read_plan(sweep: Sweep) -> dict[str, Any] | None:
    """sweep.json's diagnosis plan, or None for any other sweep."""
    return (sweep.plan or {}).get("diagnose")


def _finals(df: pd.DataFrame, plan: dict[str, Any]) -> pd.DataFrame:
    """One row per finished run: its arm (`b` and `B` for the as-is runs at the two ends), seed, v and v'."""
    done = df[df["status"].isin(["completed", "diverged"]) & df["epoch"].notna()]
    last = done.sort_values("epoch").groupby("run_id").tail(1)
    arms = last["job"].map(lambda job: plan["arms"].get(str(job)))
    ends = {plan["small_batch"]: "b", plan["large_batch"]: "B"}
    key = [ends.get(batch) if arm == AS_IS else arm for arm, batch in zip(arms, last[BATCH])]
    nothing = pd.Series(np.nan, index=last.index)
    precise = last[PRECISE["val_acc"]] if PRECISE["val_acc"] in last else nothing
    weight = last["bn_initial_weight"] if "bn_initial_weight" in last else nothing
    finals = pd.DataFrame({"key": key, "seed": last["seed"].astype(int), "v": last["val_acc"].astype(float),
                           "v_precise": precise.astype(float), "weight": weight.astype(float),
                           "step": last["step"].astype(float), "diverged": last["status"] == "diverged",
                           "job": last["job"], "shuffle": last["shuffle"].astype(bool)}).dropna(subset=["key"])
    finals.loc[finals["diverged"], ["v", "v_precise"]] = math.nan  # a diverged arm: its parts are not measured
    return finals


def _by_seed(finals: pd.DataFrame, keys: list[str], seeds: list[int], column: str) -> dict[str, np.ndarray]:
    table = finals.pivot_table(index="seed", columns="key", values=column, aggfunc="first", dropna=False)
    return {k: table.reindex(index=seeds)[k].to_numpy(dtype=float) for k in keys}


def _pieces(arm: str) -> frozenset[str]:
    return frozenset() if arm == "B" else frozenset(arm.split("_"))


def diagnose(sweep: Sweep) -> Diagnosis | None:
    """The diagnosis of a +study=diagnose sweep (None for any other), from the runs finished so far."""
    plan, df = read_plan(sweep), sweep.epochs
    if plan is None:
        return None
    b, big = plan["small_batch"], plan["large_batch"]
    finals = _finals(df, plan)
    shapley = plan["attribution"] == "shapley"
    arms = sorted(set(plan["arms"].values()) - {AS_IS}, key=len) if shapley else list(plan["ladder"])
    keys = ["b", "B", *arms]
    complete = finals.groupby("seed")["key"].agg(set)
    seeds = [int(s) for s in plan["seeds"] if s in complete.index and set(keys) <= complete[s]]
    notes = []
    if len(seeds) < len(plan["seeds"]):
        missing = [s for s in plan["seeds"] if s not in seeds]
        notes.append(f"Seed(s) {', '.join(map(str, missing))} lack a finished run in some arm and are left out: the "
                     "parts pair each seed's runs across every arm.")
    v = _by_seed(finals, keys, seeds, "v")
    precise, why_not = _precise(finals, seeds)
    v_precise = _by_seed(finals, keys, seeds, "v_precise") if precise else v
    if why_not:
        notes.append(why_not)
    if shapley:
        drop, parts = diagnosis_parts.shapley_parts({_pieces(k): v[k] for k in keys[1:]},
                                                {_pieces(k): v_precise[k] for k in keys[1:]}, v["b"],
                                                v_precise["b"], sorted(_pieces(arms[-1]) if arms else []))
    else:
        drop, parts = diagnosis_parts.ladder_parts(v, v_precise, arms)
    if not precise:
        parts = [p for p in parts if p.name != "stale_statistics"]
    if not seeds:
        drop, parts = None, []
    levels = {k: (_mean(v[k]), _mean(v_precise[k]) if precise else math.nan) for k in keys} if seeds else {}
    weights = {k: _mean(w) for k, w in _by_seed(finals, keys, seeds, "weight").items()} if seeds else {}
    steps = {k: _mean(s) for k, s in _by_seed(finals, ["b", "B"], seeds, "step").items()} if seeds else {}
    checks, unchecked = _checks(sweep, finals, plan)
    notes += unchecked + shared_checks(checks)
    level = None
    if drop is not None and drop.value is not None:
        ends = [Level(size, *levels[k], weights.get(k, math.nan), steps.get(k, 0.0))
                for size, k in ((b, "b"), (big, "B"))]
        level = levels_reading(*ends, drop.value, 1.0 / num_classes(df), margin=CHANCE_MARGIN, smallest=MIN_EFFECT)
    headline = (diagnosis_parts.sentence(drop, parts) if drop is not None else
                "No seed has finished runs in every arm yet: nothing to split.")
    if level is not None:
        headline = f"{level} The difference between them: {headline[0].lower()}{headline[1:]}"
    if seeds:
        headline = f"{headline} {method(plan)}"
    notes += _reading_notes(plan, parts, len(seeds))
    if shapley and seeds:
        notes.append(_alone(b, big, v, v_precise if precise else None, [p for p in ARM_WORDS if p in arms]))
    return Diagnosis(b, big, plan["attribution"], list(plan["ladder"]), seeds, drop, parts, checks, headline, levels,
                     notes, _evidence(sweep, finals, b, big, next((p.estimate for p in parts
                                                                    if p.name == "remains"), None)),
                     arm_weights=weights, level=level)


def _alone(b: int, big: int, v: dict[str, np.ndarray], v_precise: dict[str, np.ndarray] | None,
           pieces: list[str]) -> str:
    """What each piece recovers on its own against B as it is (the statistics' less b's own staleness, as the
    batch-size verdict reads them): beside the Shapley values, which share what pieces recover together."""
    said = []
    if v_precise is not None:
        stale = _mean((v_precise["B"] - v["B"]) - (v_precise["b"] - v["b"]))
        said.append(f"recomputed statistics {stale:+.2f}")
    said += [f"{ARM_WORDS[p].format(b=b)} {_mean(v[p] - v['B']):+.2f}" for p in pieces]
    return (f"Each piece alone, against batch {big} as it is: {', '.join(said)}. Where two pieces recover the same "
            "part of the drop (more updates also let moving averages catch up), the Shapley values share it "
            "between them, so a part can be smaller than its piece alone.")


def method(plan: dict[str, Any]) -> str:
    """How the parts were read: the attribution and the rule the learning-rate arms scaled b's rate by."""
    b, big, settings = plan["small_batch"], plan["large_batch"], plan["settings"]
    if plan["attribution"] == "shapley":
        how = "Parts as Shapley values over every combination of the arms (no order)"
    else:
        how = f"Parts along the ladder ({', then '.join(plan['ladder'])}: each credited in that order)"
    if settings.get("lr_scaling") == "linear":
        warmup = settings.get("warmup_epochs", 0.0)
        rule = f"x {big}/{b}" + (f", warmed up over {warmup:g} of batch {b}'s epochs" if warmup > 0 else "")
    else:
        rule = f"x sqrt({big}/{b})"
    return f"{how}; the learning-rate arms take batch {b}'s learning rate {rule}."


def title(d: Diagnosis) -> str:
    """The report section's heading: why B lost to b only where the runs show a drop and learned."""
    shown = d.drop is not None and d.drop.value is not None and d.drop.value > 0 and d.drop.reading == "shown"
    if d.level is None and shown:
        return f"Diagnosis: why batch {d.large_batch} lost to batch {d.small_batch}"
    return f"Diagnosis: batch {d.large_batch} against batch {d.small_batch}"


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) and np.isfinite(values).all() else math.nan


def _precise(finals: pd.DataFrame, seeds: list[int]) -> tuple[bool, str | None]:
    """Whether the parts use recomputed statistics (v'), and why not where a model has batch norm."""
    counted = finals[finals["seed"].isin(seeds)]
    if counted.empty or counted["v_precise"].isna().all():
        return False, None if counted.empty else ("Stale batch-norm statistics do not apply: the model has no "
                                                   "batch norm, so every part is read from val_acc itself.")
    if not counted["shuffle"].all():
        return False, ("Stale batch-norm statistics are not split off: with shuffle=false every batch is one "
                       "class, so its batch statistics are that class's and recomputing them on mixed data does not "
                       "say what the moving ones cost (the order check speaks for this data).")
    return True, None


def _reading_notes(plan: dict[str, Any], parts: list, n_seeds: int) -> list[str]:
    """How to read the parts (the order, remains), and what the runs could not show."""
    b, big = plan["small_batch"], plan["large_batch"]
    pieces = [ARM_WORDS[p].format(b=b) for p in plan["ladder"][-1].split("_")] if plan["ladder"] else []
    notes = []
    if plan["attribution"] == "ladder":
        notes.append(f"The ladder's order changes the parts: at batch {big}, {'; then '.join(pieces)}, each arm adding "
                     "its piece to the one before, and each part is what its piece added there. "
                     "diagnose.attribution=shapley runs every subset of the arms and gives parts that depend on no "
                     "order.")
    else:
        notes.append("Shapley values over the arms and the recomputation of the statistics: each part is its piece's "
                     "average gain over every order, so no piece is taken first.")
    notes.append(f"remains is what the arms leave of the drop: positive, a generalization gap that survives equal "
                 f"updates and a scaled learning rate; negative, batch {big} then generalises better than batch {b}. "
                 f"Its arms also saw {big / b:g}x the samples batch {b} saw ({big / b:g} times the epochs).")
    notes += [f"{name.replace('_', ' ')}: no arm, since {why}." for name, why in plan.get("left_out", {}).items()]
    unmeasured = [p.name for p in parts if p.estimate.value is None]
    if unmeasured:
        notes.append(f"Not measured: {', '.join(unmeasured)} (an arm diverged, so its accuracy is no number).")
    if n_seeds == 1:
        notes.append("One seed: no interval, the parts are indicative only; seed=0,1,2 gives each a 95% interval.")
    return notes


def _checks(sweep: Sweep, finals: pd.DataFrame, plan: dict) -> tuple[list[dict], list[str]]:
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
                             threshold=plan["settings"]["capacity"])


def _evidence(sweep: Sweep, finals: pd.DataFrame, b: int, big: int, remains) -> list[str]:
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
