"""What a sweep's data say: its verdicts on batch size, its findings on the other suspects and what the probes
say about why the large batch lost, computed once.

The report lays this out; scripts/findings.py writes the README's findings from it. Files only: no TensorFlow.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness import analysis, tuning, verdicts, why
from harness.findings import Finding, all_findings


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
    tuning: tuning.Tuning | None = None  # +study=tuned: the learning rate chosen per batch size, and its verdicts


def assess(sweep_dir: Path) -> Assessment:
    """Load a sweep and compute its verdicts and findings."""
    df = analysis.load_sweep(sweep_dir)
    keys = analysis.config_keys(sweep_dir)
    facets = analysis.facet_keys(df, keys)
    arms = df["overrides"].map(analysis.arm)
    if facets and arms.notna().all():  # a study built from arms: each facet is called by its arm's name
        df["facet"] = arms
    else:
        df["facet"] = [analysis.facet_label(r, facets) for r in df[facets].to_dict("records")] if facets else "all runs"
    final = analysis.final_results(df)
    batch_verdicts = _batch_verdicts(df, final, facets)
    varied = analysis.varied_keys(df, keys)
    found = all_findings(df, final, varied) if not final.empty else []
    if found and df[analysis.BATCH].nunique() < 2:
        batch_verdicts = []  # a study of another suspect at one batch size: its findings are the verdicts
    tuned = tuning.assess(df, final)
    if tuned is not None:  # one verdict at the tuned learning rates and one untuned, not one per grid point
        batch_verdicts = tuned.verdicts
    return Assessment(df, final, keys, varied, facets, batch_verdicts, found, why.explain(sweep_dir, df), tuned)


def _batch_verdicts(df: pd.DataFrame, final: pd.DataFrame, facets: list[str]) -> list[verdicts.BatchVerdict]:
    """A verdict for every facet whose runs span two or more batch sizes, also one whose runs have too few
    results (the verdict says why); facets that hold one batch size by design are the findings' business. When
    batch size varies only together with the facet keys, one verdict says it cannot be told apart from them."""
    if df[analysis.BATCH].nunique() < 2:
        return [verdicts.batch_size_verdict(final, "all runs", analysis.runs_table(df))]
    judged = [verdicts.batch_size_verdict(final[final["facet"] == facet], facet, analysis.runs_table(frame))
              for facet, frame in df.groupby("facet") if frame[analysis.BATCH].nunique() >= 2]
    return judged or [verdicts.confounded_verdict(sorted(df[analysis.BATCH].unique().tolist()), facets)]
