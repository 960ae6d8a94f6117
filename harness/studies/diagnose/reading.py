"""+study=diagnose: the drop in val_acc from the small batch b to the large batch B, split into its causes, and the
data checked for the other suspects. Files in, numbers and sentences out. The plan (sweep.json's `diagnose`, plan.py)
names each job's arm. Per seed, v is a run's final val_acc and v' the same with batch-norm statistics recomputed
for its final weights (v' = v without batch norm, and for class-sorted data, whose batch statistics are each one
class's); parts.py splits D = v(b) - v(B) into parts that add up to it, with paired t-intervals over the seeds
complete in every arm; checks.py reads the data checks and the probes beside remains, words.py says it.
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
from harness.studies.diagnose import checks as diagnosis_checks
from harness.studies.diagnose import parts as diagnosis_parts
from harness.studies.diagnose import words

AS_IS = "as_is"


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
    checks, unchecked = diagnosis_checks.read(sweep, finals, plan)
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
        headline = f"{headline} {words.method(plan)}"
    notes += words.reading_notes(plan, parts, len(seeds))
    if shapley and seeds:
        stale = _mean((v_precise["B"] - v["B"]) - (v_precise["b"] - v["b"])) if precise else None
        notes.append(words.alone(b, big, stale, {p: _mean(v[p] - v["B"]) for p in words.ARM_WORDS if p in arms}))
    return Diagnosis(b, big, plan["attribution"], list(plan["ladder"]), seeds, drop, parts, checks, headline, levels,
                     notes, diagnosis_checks.evidence(sweep, finals, b, big, next((p.estimate for p in parts
                                                                    if p.name == "remains"), None)),
                     arm_weights=weights, level=level)


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


