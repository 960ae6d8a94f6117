"""What every figure of the report shares: the palette, label wrapping, log2 batch axes, legends below the
panels, grids that grow with their content, and the mean ± sd summaries the lines and bars are drawn from."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
PANEL_W, PANEL_H = 3.3, 2.6  # inches per panel of a grid
LEGEND_ROW = 0.28            # inches of figure height per row of a legend below the plots


def wrap(label: str, width: int = 34) -> str:
    return textwrap.fill(str(label), width=width, break_long_words=True)


def colors_for(labels) -> dict:
    """One colour per label, in order, from PALETTE."""
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}


def mean_sd_by(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Per value of x: y's mean, standard deviation (0 for a single run) and count."""
    summary = frame.groupby(x)[y].agg(["mean", "std", "count"]).reset_index()
    summary["std"] = summary["std"].fillna(0.0)
    return summary


def log2_axis(ax, sizes) -> None:
    """Every swept batch size as a tick on a log2 axis; labels turn when there are many, so none overlap."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes], rotation=45 if len(sizes) > 6 else 0)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.minorticks_off()
    if len(sizes) == 1:  # a single size: a little room either side
        ax.set_xlim(sizes[0] / 2, sizes[0] * 2)


def legend_below(fig: Figure, handles, labels, columns: int = 4) -> None:
    if handles:
        fig.legend(handles, [wrap(label, 40) for label in labels], loc="outside lower center", fontsize=8,
                   ncols=min(columns, len(handles)))


def legend_rows(entries: int, columns: int = 4) -> int:
    return math.ceil(entries / columns) if entries else 0


def grid(fig_width_panels: int, count: int, *, legend_entries: int = 0, extra_height: float = 0.0,
         panel=(PANEL_W, PANEL_H), sharey=True, title_lines: int = 1):
    """A figure with `count` panels in rows of at most `fig_width_panels`; unused cells hidden."""
    columns = max(1, min(fig_width_panels, count))
    rows = max(1, math.ceil(count / columns))
    height = (panel[1] + 0.16 * (title_lines - 1)) * rows + LEGEND_ROW * legend_rows(legend_entries) + 0.4
    fig = Figure(figsize=(max(panel[0] * columns, 5.0), height + extra_height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns, sharey=sharey, squeeze=False)).ravel()
    for ax in axes[count:]:
        ax.set_visible(False)
    return fig, list(axes[:count])


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation of a list (nan and 0 when empty, sd 0 for a single value)."""
    if not values:
        return float("nan"), 0.0
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
