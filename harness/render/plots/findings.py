"""The findings at a glance: for each suspect, the treated group beside its reference.

One panel per comparison: train accuracy and val_acc of each side as bars (mean over runs, ±1 sd), the gap
train_eval_acc - val_acc written above each side. Pure: findings in, a matplotlib Figure out.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from harness.render.plots.style import grid, legend_below, mean_sd, wrap

STYLES = {"train_acc": ("running train_acc", "#9ecae1", ".."), "train_eval_acc": ("train_eval_acc", "#3182bd", ""),
          "val_acc": ("val_acc", "#222222", ""),
          "val_acc_precise_bn": ("val_acc, recomputed BN statistics", "#888888", "//")}


def _gap(metrics: dict, side: int) -> str:
    if "train_eval_acc" not in metrics or not metrics["val_acc"][side]:
        return ""
    gap = mean_sd(metrics["train_eval_acc"][side])[0] - mean_sd(metrics["val_acc"][side])[0]
    return f"gap {gap:+.2f}"


def findings_figure(findings) -> Figure | None:
    """A panel per comparison of every finding; None when no finding has one."""
    panels = [(finding, comparison) for finding in findings for comparison in finding.comparisons]
    if not panels:
        return None
    metrics = [m for m in STYLES if any(m in c.metrics for _, c in panels)]
    titles = [wrap(f"{f.subject}: {c.title}", 40) for f, c in panels]
    lines = max(t.count("\n") + 1 for t in titles)
    fig, axes = grid(3, len(panels), legend_entries=len(metrics), panel=(3.6, 2.9), title_lines=lines)
    width = 0.8 / len(metrics)
    for ax, (finding, comparison), title in zip(axes, panels, titles):
        for i, metric in enumerate(m for m in metrics if m in comparison.metrics):
            label, color, hatch = STYLES[metric]
            stats = [mean_sd(comparison.metrics[metric][side]) for side in (0, 1)]
            ax.bar(np.arange(2) + (i - (len(metrics) - 1) / 2) * width, [s[0] for s in stats], width,
                   yerr=[s[1] for s in stats], color=color, hatch=hatch, capsize=2, edgecolor="white", label=label)
        for side in (0, 1):
            ax.text(side, 1.04, _gap(comparison.metrics, side), ha="center", va="bottom", fontsize=7.5)
        ax.set_xticks([0, 1], [wrap(comparison.reference, 18), wrap(comparison.treated, 18)], fontsize=8)
        ax.set_ylim(0, 1.18)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_title(title, fontsize=8.5)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("accuracy")
    legend_below(fig, [Patch(facecolor=STYLES[m][1], hatch=STYLES[m][2], edgecolor="white") for m in metrics],
                 [STYLES[m][0] for m in metrics], columns=3)
    return fig


def figures(a) -> list[tuple[str, Figure, str]]:
    """(title, Figure, caption) of the suspects' figure, when some finding has a comparison."""
    fig = findings_figure(a.findings) if not a.final.empty else None
    caption = (
        "For every finding under Other suspects: train accuracy and val_acc of the reference runs (left of each "
        "panel) and of the treated runs (right), mean ± sd over runs; the gap train_eval_acc - val_acc above each "
        "side.")
    return [] if fig is None else [("Suspects: each treated group beside its reference", fig, caption)]
