"""+study=scaling's part of the report: in the verdict's place, each curve's headline (verdict.html.j2); its
section (section.html.j2): each curve's reading and points as a table, and figures.py; its lines in the findings."""
from __future__ import annotations

from pathlib import Path

from harness.studies.scaling import figures
from harness.studies.scaling.words import fmt
from harness.studies.study import Section

FOLDER = Path(__file__).resolve().parent


def sections(a) -> list[Section]:
    """The verdict's place and the "How far does the batch scale?" section of an assessment whose reading is its
    curves."""
    context = {"scaling": [(s, scaling_rows(s)) for s in a.reading]}
    return [Section("verdict.html.j2", FOLDER, context, place="verdict"),
            Section("section.html.j2", FOLDER, context, figures.figures(a))]


def scaling_rows(s) -> list[list[str]]:
    """The scaling section's table: one row per batch size."""
    if s is None:
        return []
    rows = []
    for p in s.points:
        val = "–" if p.val_acc is None else f"{p.val_acc:.3f}" + (
            "" if p.val_interval is None else f" ± {(p.val_interval[1] - p.val_interval[0]) / 2:.3f}")
        lr = "none reached" if p.lr is None else fmt(p.lr) + (f" ({p.edge})" if p.edge else "")
        rows.append([str(p.batch), lr, fmt(p.steps), fmt(p.samples),
                     "–" if p.ratio is None else f"{p.ratio:.2f}", p.regime or "–",
                     "–" if p.resolution is None else f"{100 * p.resolution:.1f}%", val, fmt(p.noise)])
    return rows


def findings_lines(s) -> list[str]:
    """+study=scaling: its headline and reading, and its points as a table."""
    lines = [f"- **{f'[{s.group}] ' if s.group else ''}{s.headline}**", *[f"- {line}" for line in s.lines], "",
             "| batch | chosen lr | steps to target | samples to target | regime | val_acc at target |",
             "| ---: | ---: | ---: | ---: | --- | ---: |"]
    for p in s.points:
        val = "–" if p.val_acc is None else f"{p.val_acc:.3f}"
        lines.append(f"| {p.batch} | {'none reached' if p.lr is None else fmt(p.lr)} | {fmt(p.steps)} | "
                     f"{fmt(p.samples)} | {p.regime or '–'} | {val} |")
    return lines
