"""What a sweep's data say: its verdicts on batch size, its findings on the other suspects and what the probes
say about why the large batch lost, computed once.

The report lays this out; scripts/findings.py writes the README's findings from it. Files only: no TensorFlow.
"""
from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.assess import analysis, facets, verdicts, why
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
    reading: Any = None          # a study's own reading of the sweep (harness.studies: a diagnosis, a recovery, the
    # learning rates tuned per batch size, the steps to a target), None for a batch-size study
    facet_table: facets.FacetTable | None = None  # more than facets.MANY facets: their verdicts as one table
    drawn: pd.DataFrame | None = None  # with a facet table: the epochs the figures draw (facets.shown)


@dataclass
class Common:
    """What every reading of a sweep starts from: its epochs with facets, their final results, the varied keys, the
    other suspects' findings and the batch-size verdicts (none for a study of another suspect at one batch size)."""

    sweep: Sweep
    df: pd.DataFrame
    facets: list[str]
    final: pd.DataFrame
    varied: list[str]
    findings: list[Finding]
    verdicts: list[verdicts.BatchVerdict]

    def assessment(self, batch_verdicts: list, reading: Any = None) -> Assessment:
        """An assessment of these runs with these verdicts and a study's own reading; the probes of every run."""
        return Assessment(self.df, self.final, self.sweep.keys, self.varied, self.facets, batch_verdicts,
                          self.findings, why.explain(self.sweep, self.df), reading=reading)


def common(sweep: Sweep) -> Common:
    """The sweep's Common reading (a sweep folder is read first: harness.assess.sweep.read)."""
    sweep = sweep if isinstance(sweep, Sweep) else read(sweep)
    df = _with_facets(sweep)
    facet_keys = analysis.facet_keys(df, sweep.keys)
    final = analysis.final_results(df)
    batch_verdicts = _batch_verdicts(df, final, facet_keys)
    varied = analysis.varied_keys(df, sweep.keys)
    found = all_findings(df, final, varied) if not final.empty else []
    if found and df[analysis.BATCH].nunique() < 2:
        batch_verdicts = []  # a study of another suspect at one batch size: its findings are the verdicts
    return Common(sweep, df, facet_keys, final, varied, found, batch_verdicts)


def assess(sweep: Sweep | Path | Common) -> Assessment:
    """The sweep's verdicts and findings read as a batch-size study (a sweep folder is read first:
    harness.assess.sweep.read): a verdict per facet, or one table of them when there are many. A study with a
    reading of its own reads it through harness.studies.registry.assess."""
    c = sweep if isinstance(sweep, Common) else common(sweep)
    batch_verdicts = [_with_setting(v, c.sweep, c.df) for v in c.verdicts]
    table = facets.table(batch_verdicts, c.final, c.df)
    if table is None:
        return c.assessment(batch_verdicts)
    first = c.df[c.df["facet"] == table.shown[0]]  # its probes: the Why of the facet that decides the headline
    return Assessment(c.df, c.final, c.sweep.keys, c.varied, c.facets, batch_verdicts, c.findings,
                      why.explain(c.sweep, first), facet_table=table, drawn=facets.shown(c.df, table))


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
                      [verdict], [], why.explain(sweep, as_is), reading=reading)


def all_findings(df: pd.DataFrame, final: pd.DataFrame, varied: list[str]) -> list[Finding]:
    """Every finding the sweep's data allow: the other suspects, then the controls of the batch-size study."""
    found = [batchnorm_finding(df, varied), shuffle_finding(df, varied)]
    found += [f(final, varied) for f in (imbalance_finding, preprocess_finding, capacity_finding, controls_finding,
                                         hoffer_finding)]
    return [f for f in found if f is not None]


NOT_FORWARDED = ("batch_size", "seed", "hydra.", "+study", "study")  # what a study sets, or the launcher's


def _with_setting(verdict: verdicts.BatchVerdict, sweep: Sweep, df: pd.DataFrame) -> verdicts.BatchVerdict:
    """A verdict that shows a drop, with its setting: every override its runs share (the facet's values among
    them), from which a study names the command for its next step (harness.studies.registry.assess)."""
    if not (verdict.effect >= verdicts.MIN_EFFECT and verdict.outcome != "not reproduced"):
        return verdict
    ran = set(df.loc[df["facet"] == verdict.subject, "run_id"])
    overrides = [r.get("overrides") or [] for r in sweep.records if r.get("run_id") in ran]
    if not overrides:
        return verdict
    shared = [o for o in overrides[0] if all(o in other for other in overrides[1:])
              and not o.lstrip("+~").startswith(NOT_FORWARDED)]
    return dataclasses.replace(verdict, setting=shared)


def with_next_steps(a: Assessment, steps) -> Assessment:
    """A batch-size reading whose verdicts that show a drop name each next step of `steps` (callables of a verdict
    returning (study, sentence, command), or None), a detail line each: "<sentence>: <command>"."""
    def named(v: verdicts.BatchVerdict) -> verdicts.BatchVerdict:
        if v.setting is None:
            return v
        found = [step for step in (offer(v) for offer in steps) if step is not None]
        lines = [f"{sentence}: {command}" for _, sentence, command in found]
        return dataclasses.replace(v, details=[*v.details, *lines],
                                   next_steps=[(study, command) for study, _, command in found])

    return dataclasses.replace(a, batch_verdicts=[named(v) for v in a.batch_verdicts])


def study_command(study: str, verdict: verdicts.BatchVerdict) -> str:
    """`python -m harness +study=<study>` at a verdict's smallest and largest batch size, on its setting."""
    sizes = f"batch_size={verdict.batch_sizes[0]},{verdict.batch_sizes[-1]}"
    return shlex.join(["python", "-m", "harness", f"+study={study}", sizes, *(verdict.setting or []), "-m"])


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
