"""What a sweep's data say: its verdicts on batch size, its findings on the other suspects and what the probes
say about why the large batch lost, computed once.

The report lays this out; scripts/findings.py writes the README's findings from it. Files only: no TensorFlow.
"""
from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.assess import analysis, facets, scaling, tuning, verdicts, why
from harness.assess.batch_controls import controls_finding, hoffer_finding
from harness.assess.findings import (
    Finding,
    batchnorm_finding,
    capacity_finding,
    imbalance_finding,
    preprocess_finding,
    shuffle_finding,
)
from harness.assess.sweep import Sweep, read


@dataclass
class Assessment:
    """What the data of one sweep say: everything the report and the README's findings are built from."""

    df: pd.DataFrame             # every epoch of every run, with a `facet` column
    final: pd.DataFrame          # one row per completed run
    keys: list[str]              # config keys
    varied: list[str]            # keys that take more than one value
    facets: list[str]            # varied keys the results are split by
    batch_verdicts: list[verdicts.BatchVerdict]
    findings: list[Finding]
    why: why.Why                 # the probes: sharpness, noise scale, distance travelled
    tunings: list[tuning.Tuning]  # +study=tuned: the learning rate chosen per batch size, and its verdicts
    scaling: list[scaling.Scaling] = field(default_factory=list)  # +study=scaling: steps to target and the
    # critical batch, one curve per combination of the other varied keys (none for another sweep)
    reading: Any = None          # a study's own reading of the sweep (harness.studies: a diagnosis, a recovery)
    facet_table: facets.FacetTable | None = None  # more than facets.MANY facets: their verdicts as one table
    drawn: pd.DataFrame | None = None  # with a facet table: the epochs the figures draw (facets.shown)


def assess(sweep: Sweep | Path) -> Assessment:
    """The sweep's verdicts and findings read as a batch-size study (a sweep folder is read first:
    harness.assess.sweep.read); a study with a reading of its own reads it through harness.studies.registry.assess.
    The tuned and scaling presets are read their own way here (STUDIES); for the main job, an ad-hoc sweep or one
    recorded before studies were named, what its files hold decides (`detect`)."""
    sweep = sweep if isinstance(sweep, Sweep) else read(sweep)
    kind = STUDIES.get(sweep.study, BATCH_SIZE) if sweep.study is not None else detect(sweep)
    df = _with_facets(sweep)
    facet_keys = analysis.facet_keys(df, sweep.keys)
    final = analysis.final_results(df)
    batch_verdicts = _batch_verdicts(df, final, facet_keys)
    varied = analysis.varied_keys(df, sweep.keys)
    found = all_findings(df, final, varied) if not final.empty else []
    if found and df[analysis.BATCH].nunique() < 2:
        batch_verdicts = []  # a study of another suspect at one batch size: its findings are the verdicts
    scaled = scaling.assess(sweep, df, facet_keys) if kind == SCALING else []
    if scaled:  # runs stopped at a target: steps to it are the measure, not the last epoch's val_acc
        return Assessment(df, final, sweep.keys, varied, facet_keys, [], found, why.explain(sweep, df), [], scaled)
    # a scaling study short of two batch sizes at its target is read for its learning-rate grid, as a tuned one
    tunings = tuning.assess(df, final, facet_keys, len(sweep.not_started)) if kind in (TUNED, SCALING) else []
    if tunings:  # one verdict at the tuned learning rates and one untuned, not one per point of the grid
        batch_verdicts = [v for t in tunings for v in t.verdicts]
    else:
        batch_verdicts = [_with_diagnose_command(v, sweep, df) for v in batch_verdicts]
    table = None if tunings else facets.table(batch_verdicts, final, df)
    if table is None:
        return Assessment(df, final, sweep.keys, varied, facet_keys, batch_verdicts, found, why.explain(sweep, df),
                          tunings)
    first = df[df["facet"] == table.shown[0]]  # its probes: the Why of the facet that decides the headline
    return Assessment(df, final, sweep.keys, varied, facet_keys, batch_verdicts, found, why.explain(sweep, first),
                      tunings, facet_table=table, drawn=facets.shown(df, table))


BATCH_SIZE, SCALING, TUNED = "batch_size", "scaling", "tuned"
# presets (conf/study/) read their own way
STUDIES = {"scaling": SCALING, "tuned": TUNED}


def detect(sweep: Sweep) -> str:
    """The kind of study a sweep without a study's name is, from its files: runs stopped at a target (scaling); a
    learning-rate grid at some batch size, tuned on a held-out slice (tuned); else a batch-size study."""
    if "target_tune_acc" in sweep.epochs.columns and sweep.epochs["target_tune_acc"].notna().any():
        return SCALING
    return TUNED if tuning.tunes(sweep.epochs) else BATCH_SIZE


def _with_facets(sweep: Sweep) -> pd.DataFrame:
    """The sweep's epochs with a `facet` column: the arm a study built from arms calls each run by, else the values
    of the varied keys other than batch size and seed (harness.assess.analysis.facet_keys)."""
    df = sweep.epochs
    facet_keys = analysis.facet_keys(df, sweep.keys)
    arms = df["overrides"].map(analysis.arm)
    if facet_keys and arms.notna().all():
        return df.assign(facet=arms)
    return df.assign(facet=[analysis.facet_label(r, facet_keys) for r in df[facet_keys].to_dict("records")]
                     if facet_keys else "all runs")


def of_arms(sweep: Sweep, arms: dict[str, str], reading: Any) -> Assessment:
    """A study built from arms (each job's arm, `as_is` the runs as the command gave them): its facets are its arms;
    the verdict and the probes' Why read the runs as they are; the study's own `reading` replaces the other
    suspects' findings (its arms speak for them)."""
    df = sweep.epochs.assign(facet=sweep.epochs["job"].map(lambda job: arms.get(str(job), "not planned"))
                             .str.replace("_", " "))
    as_is = df[df["facet"] == "as is"]
    verdict = verdicts.batch_size_verdict(analysis.final_results(as_is), "as is", analysis.runs_table(as_is))
    return Assessment(df, analysis.final_results(df), sweep.keys, analysis.varied_keys(df, sweep.keys), ["arm"],
                      [verdict], [], why.explain(sweep, as_is), [], reading=reading)


def all_findings(df: pd.DataFrame, final: pd.DataFrame, varied: list[str]) -> list[Finding]:
    """Every finding the sweep's data allow: the other suspects, then the controls of the batch-size study."""
    found = [batchnorm_finding(df, varied), shuffle_finding(df, varied)]
    found += [f(final, varied) for f in (imbalance_finding, preprocess_finding, capacity_finding, controls_finding,
                                         hoffer_finding)]
    return [f for f in found if f is not None]


NOT_FORWARDED = ("batch_size", "seed", "hydra.", "+study", "study")  # what a diagnosis sets, or the launcher's
DIAGNOSE_LINE = ("To split this drop into its causes on this setting (fewer updates, the learning rate, batch-norm "
                 "statistics and what remains): {command}")


def _with_diagnose_command(verdict: verdicts.BatchVerdict, sweep: Sweep, df: pd.DataFrame) -> verdicts.BatchVerdict:
    """A verdict that shows a drop, with the `+study=diagnose` command that splits it on the same setting: its
    smallest and largest batch size and every override its runs share (the facet's values among them)."""
    if not (verdict.effect >= verdicts.MIN_EFFECT and verdict.outcome != "not reproduced"):
        return verdict
    ran = set(df.loc[df["facet"] == verdict.subject, "run_id"])
    overrides = [r.get("overrides") or [] for r in sweep.records if r.get("run_id") in ran]
    if not overrides:
        return verdict
    shared = [o for o in overrides[0] if all(o in other for other in overrides[1:])
              and not o.lstrip("+~").startswith(NOT_FORWARDED)]
    sizes = f"batch_size={verdict.batch_sizes[0]},{verdict.batch_sizes[-1]}"
    command = shlex.join(["python", "-m", "harness", "+study=diagnose", sizes, *shared, "-m"])
    return dataclasses.replace(verdict, details=[*verdict.details, DIAGNOSE_LINE.format(command=command)],
                               diagnose=command)


def _batch_verdicts(df: pd.DataFrame, final: pd.DataFrame, facets: list[str]) -> list[verdicts.BatchVerdict]:
    """A verdict for every facet whose runs span two or more batch sizes, also one whose runs have too few
    results (the verdict says why); facets that hold one batch size by design are the findings' business. When
    batch size varies only together with the facet keys, one verdict says it cannot be told apart from them."""
    if df[analysis.BATCH].nunique() < 2:
        return [verdicts.batch_size_verdict(final, "all runs", analysis.runs_table(df))]
    frames = {facet: df[df["facet"] == facet] for facet in analysis.facet_order(df["facet"])}
    judged = [verdicts.batch_size_verdict(final[final["facet"] == facet], facet, analysis.runs_table(frame))
              for facet, frame in frames.items() if frame[analysis.BATCH].nunique() >= 2]
    return judged or [verdicts.confounded_verdict(sorted(df[analysis.BATCH].unique().tolist()), facets)]
