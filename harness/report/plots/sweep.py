"""Pure plot functions: a tidy DataFrame in, a matplotlib Figure out (no pyplot, no global state).

Frames carry a `facet` column (one short label per combination of varied keys, or the study arm's name); lines
are averaged over seeds only, never over a facet, and spread bands or error bars span ±1 standard deviation
over seeds. Layout rules, checked by tests/test_plots.py with matplotlib's own renderer: long labels wrap, never
cut; legends sit below the plots, never over them; figures grow with their content (a grid of panels with a
fixed number of columns).
"""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from harness.assess.analysis import BATCH, facet_order

CURVES = [("train_acc", "train_acc (running, during epoch)", ":"),
          ("train_eval_acc", "train_eval_acc (after epoch)", "--"),
          ("val_acc", "val_acc", "-")]
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
PANEL_W, PANEL_H = 3.3, 2.6  # inches per panel of a grid
LEGEND_ROW = 0.28            # inches of figure height per row of a legend below the plots


def wrap(label: str, width: int = 34) -> str:
    return textwrap.fill(str(label), width=width, break_long_words=True)


def _colors(labels) -> dict:
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}


def _mean_sd(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
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


def _legend_rows(entries: int, columns: int = 4) -> int:
    return math.ceil(entries / columns) if entries else 0


def grid(fig_width_panels: int, count: int, *, legend_entries: int = 0, extra_height: float = 0.0,
         panel=(PANEL_W, PANEL_H), sharey=True, title_lines: int = 1):
    """A figure with `count` panels in rows of at most `fig_width_panels`; unused cells hidden."""
    columns = max(1, min(fig_width_panels, count))
    rows = max(1, math.ceil(count / columns))
    height = (panel[1] + 0.16 * (title_lines - 1)) * rows + LEGEND_ROW * _legend_rows(legend_entries) + 0.4
    fig = Figure(figsize=(max(panel[0] * columns, 5.0), height + extra_height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns, sharey=sharey, squeeze=False)).ravel()
    for ax in axes[count:]:
        ax.set_visible(False)
    return fig, list(axes[:count])


def learning_curves(df: pd.DataFrame) -> Figure:
    """Running train, post-epoch train and validation accuracy per epoch: a panel per (facet, batch size)."""
    epochs = df[df["epoch"].notna()]
    cells = [(facet, size) for facet in facet_order(epochs["facet"]) for size in sorted(epochs[BATCH].unique())
             if not epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)].empty]
    several = epochs["facet"].nunique() > 1
    titles = [f"batch {size}" + (f" · {facet}" if several else "") for facet, size in cells]
    lines = max((wrap(t).count("\n") + 1 for t in titles), default=1)
    fig, axes = grid(4, len(cells), legend_entries=len(CURVES), title_lines=lines)
    for ax, (facet, size), title in zip(axes, cells, titles):
        cell = epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)]
        for column, label, style in CURVES:
            stats = _mean_sd(cell, "epoch", column)
            ax.plot(stats["epoch"], stats["mean"], style, color="black" if column == "val_acc" else "#1f77b4",
                    label=label)
            ax.fill_between(stats["epoch"], stats["mean"] - stats["std"], stats["mean"] + stats["std"],
                            alpha=0.15, color="gray")
        ax.set_title(wrap(f"{title} (n={cell['run_id'].nunique()})"), fontsize=8.5)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
        ax.set_xlabel("epoch", fontsize=8)
    if axes:
        axes[0].set_ylabel("accuracy")
        legend_below(fig, *axes[0].get_legend_handles_labels(), columns=3)
    return fig


def accuracy_vs_batch(final: pd.DataFrame) -> Figure:
    """Final and best val_acc vs batch size, and the gap train_eval_acc - val_acc, mean ± sd over seeds."""
    facets = facet_order(final["facet"])
    colors = _colors(facets)
    entries = 2 + (len(facets) if len(facets) > 1 else 0)
    fig = Figure(figsize=(10, 3.8 + LEGEND_ROW * _legend_rows(entries)), layout="constrained")
    acc_ax, gap_ax = fig.subplots(1, 2)
    for facet, frame in final.groupby("facet"):
        for column, style in [("val_acc", "-o"), ("best_val_acc", "--s")]:
            s = _mean_sd(frame, BATCH, column)
            name = {"val_acc": "final val_acc", "best_val_acc": "best-epoch val_acc"}[column]
            acc_ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt=style, color=colors[facet], capsize=3,
                            label=f"{name} | {facet}" if len(facets) > 1 else name)
        s = _mean_sd(frame, BATCH, "gap")
        gap_ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt="-o", color=colors[facet], capsize=3, label=facet)
    acc_ax.set(xlabel="global batch size", ylabel="validation accuracy", title="val_acc vs batch size")
    gap_ax.set(xlabel="global batch size", ylabel="train_eval_acc - val_acc", title="generalization gap")
    gap_ax.axhline(0, color="gray", lw=0.8)
    sizes = sorted(final[BATCH].unique())
    for ax in (acc_ax, gap_ax):
        if sizes:
            log2_axis(ax, sizes)
        ax.grid(alpha=0.3)
    handles = [Line2D([], [], color="black", marker="o", ls="-"), Line2D([], [], color="black", marker="s", ls="--")]
    labels = ["final val_acc", "best-epoch val_acc"]
    if len(facets) > 1:
        handles += [Line2D([], [], color=colors[f], marker="o") for f in facets]
        labels += facets
    legend_below(fig, handles, labels)
    return fig


def val_vs_steps(df: pd.DataFrame) -> Figure:
    """Validation accuracy against optimizer steps (log scale), one line per batch size: the steps-matched view."""
    return metric_vs_steps(df[df["epoch"].notna()], "val_acc", "val_acc", "val_acc vs steps")


def metric_vs_steps(epochs: pd.DataFrame, column: str, ylabel: str, title: str, band: bool = False) -> Figure:
    """`column` against optimizer steps (log axis), a line per batch size (mean over seeds, ±1 sd band with
    `band`), a panel per facet; `title` names the single panel of a sweep without facets."""
    facets = facet_order(epochs["facet"])
    sizes = sorted(epochs[BATCH].unique())
    colors = _colors(sizes)
    lines = max((wrap(f, 44).count("\n") + 1 for f in facets), default=1)
    fig, axes = grid(3, len(facets), legend_entries=len(sizes), panel=(4.2, 3.0), title_lines=lines)
    for ax, facet in zip(axes, facets):
        for size in sizes:
            cell = epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)]
            if not cell.empty:
                s = _mean_sd(cell, "step", column)
                ax.plot(s["step"], s["mean"], "-o", ms=2.5, color=colors[size], label=f"batch {size}")
                if band:
                    ax.fill_between(s["step"], s["mean"] - s["std"], s["mean"] + s["std"], color=colors[size],
                                    alpha=0.15)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # 10, 20, 50, 100, ...
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("optimizer steps", fontsize=8)
        ax.set_title(wrap(facet, 44) if len(facets) > 1 else title, fontsize=8.5)
        ax.grid(alpha=0.3)
    if axes:
        axes[0].set_ylabel(ylabel)
    legend_below(fig, [Line2D([], [], color=colors[s], marker="o") for s in sizes], [f"batch {s}" for s in sizes],
                 columns=6)
    return fig


def batchnorm_val_vs_steps(df: pd.DataFrame) -> Figure:
    """val_acc with the moving batch-norm statistics (solid) and with statistics recomputed for the current
    weights (dashed) against optimizer steps, a colour per batch size, a panel per facet (mean over seeds)."""
    epochs = df[df["epoch"].notna() & df["val_acc_precise_bn"].notna()]
    facets = facet_order(epochs["facet"])
    sizes = sorted(epochs[BATCH].unique())
    colors = _colors(sizes)
    lines = max((wrap(f, 44).count("\n") + 1 for f in facets), default=1)
    fig, axes = grid(3, len(facets), legend_entries=len(sizes) + 2, panel=(4.2, 3.0), title_lines=lines)
    for ax, facet in zip(axes, facets):
        for size in sizes:
            cell = epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)]
            for column, style in (("val_acc", "-o"), ("val_acc_precise_bn", "--s")):
                if not cell.empty:
                    s = _mean_sd(cell, "step", column)
                    ax.plot(s["step"], s["mean"], style, ms=2.5, color=colors[size])
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("optimizer steps", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(wrap(facet, 44) if len(facets) > 1 else "val_acc: moving vs recomputed statistics", fontsize=8.5)
        ax.grid(alpha=0.3)
    if axes:
        axes[0].set_ylabel("val_acc")
    handles = [Line2D([], [], color="black", marker="o", ls="-"), Line2D([], [], color="black", marker="s", ls="--")]
    handles += [Line2D([], [], color=colors[s], marker="o") for s in sizes]
    legend_below(fig, handles, ["moving statistics", "recomputed statistics", *[f"batch {s}" for s in sizes]],
                 columns=6)
    return fig


def _throughput_per_run(df: pd.DataFrame, by: str) -> pd.DataFrame:
    """Each run's median samples/s over its epochs after the first (which includes tracing)."""
    epochs = df[df["epoch"].notna()]
    warm = epochs[(epochs["epoch"] > 1) | (epochs.groupby("run_id")["epoch"].transform("max") == 1)]
    return warm.groupby(["run_id", by, BATCH])["samples_per_second"].median().reset_index()


def throughput_vs_batch(df: pd.DataFrame) -> Figure:
    """Training samples per second (median over a run's epochs after the first) vs batch size."""
    per_run = _throughput_per_run(df, "facet")
    facets = facet_order(per_run["facet"])
    colors = _colors(facets)
    entries = len(facets) if len(facets) > 1 else 0
    fig = Figure(figsize=(6.5, 3.8 + LEGEND_ROW * _legend_rows(entries, 2)), layout="constrained")
    ax = fig.subplots()
    for facet, frame in per_run.groupby("facet"):
        s = _mean_sd(frame, BATCH, "samples_per_second")
        ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt="-o", color=colors[facet], capsize=3, label=facet)
    sizes = sorted(per_run[BATCH].unique())
    if sizes:
        log2_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set(xlabel="global batch size", ylabel="training samples / s", title="throughput")
    ax.grid(alpha=0.3)
    if entries:
        legend_below(fig, [Line2D([], [], color=colors[f], marker="o") for f in facets], facets, columns=2)
    return fig


def throughput_vs_replicas(df: pd.DataFrame) -> Figure:
    """Training samples per second vs replica count, one line per global batch size."""
    per_run = _throughput_per_run(df, "replicas")
    sizes = sorted(per_run[BATCH].unique())
    colors = _colors(sizes)
    fig = Figure(figsize=(6.5, 3.8 + LEGEND_ROW * _legend_rows(len(sizes), 6)), layout="constrained")
    ax = fig.subplots()
    for size, frame in per_run.groupby(BATCH):
        s = _mean_sd(frame, "replicas", "samples_per_second")
        ax.errorbar(s["replicas"], s["mean"], yerr=s["std"], fmt="-o", color=colors[size], capsize=3,
                    label=f"batch {size}")
    log2_axis(ax, sorted(per_run["replicas"].unique()))
    ax.set(xlabel="replicas", ylabel="training samples / s", title="throughput vs replicas")
    ax.grid(alpha=0.3)
    legend_below(fig, [Line2D([], [], color=colors[s], marker="o") for s in sizes], [f"batch {s}" for s in sizes],
                 columns=6)
    return fig
