"""Pure plot functions: a tidy DataFrame in, a matplotlib Figure out (no pyplot, no global state).

Frames carry a `facet` column (one short label per combination of varied keys, or the study arm's name); lines
are averaged over seeds only, never over a facet, and spread bands or error bars span ±1 standard deviation
over seeds. Layout rules, checked by tests/report/test_figures.py with matplotlib's own renderer: long labels
wrap, never cut; legends sit below the plots, never over them; figures grow with their content (a grid of panels with a
fixed number of columns).
"""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from harness.assess.analysis import BATCH, facet_order
from harness.render.plots.style import (
    LEGEND_ROW,
    colors_for,
    grid,
    legend_below,
    legend_rows,
    log2_axis,
    mean_sd_by,
    wrap,
)

CURVES = [("train_acc", "train_acc (running, during epoch)", ":"),
          ("train_eval_acc", "train_eval_acc (after epoch)", "--"),
          ("val_acc", "val_acc", "-")]
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
            stats = mean_sd_by(cell, "epoch", column)
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
    colors = colors_for(facets)
    entries = 2 + (len(facets) if len(facets) > 1 else 0)
    fig = Figure(figsize=(10, 3.8 + LEGEND_ROW * legend_rows(entries)), layout="constrained")
    acc_ax, gap_ax = fig.subplots(1, 2)
    for facet, frame in final.groupby("facet"):
        for column, style in [("val_acc", "-o"), ("best_val_acc", "--s")]:
            s = mean_sd_by(frame, BATCH, column)
            name = {"val_acc": "final val_acc", "best_val_acc": "best-epoch val_acc"}[column]
            acc_ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt=style, color=colors[facet], capsize=3,
                            label=f"{name} | {facet}" if len(facets) > 1 else name)
        s = mean_sd_by(frame, BATCH, "gap")
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
    colors = colors_for(sizes)
    lines = max((wrap(f, 44).count("\n") + 1 for f in facets), default=1)
    fig, axes = grid(3, len(facets), legend_entries=len(sizes), panel=(4.2, 3.0), title_lines=lines)
    for ax, facet in zip(axes, facets):
        for size in sizes:
            cell = epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)]
            if not cell.empty:
                s = mean_sd_by(cell, "step", column)
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
    colors = colors_for(sizes)
    lines = max((wrap(f, 44).count("\n") + 1 for f in facets), default=1)
    fig, axes = grid(3, len(facets), legend_entries=len(sizes) + 2, panel=(4.2, 3.0), title_lines=lines)
    for ax, facet in zip(axes, facets):
        for size in sizes:
            cell = epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)]
            for column, style in (("val_acc", "-o"), ("val_acc_precise_bn", "--s")):
                if not cell.empty:
                    s = mean_sd_by(cell, "step", column)
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
    colors = colors_for(facets)
    entries = len(facets) if len(facets) > 1 else 0
    fig = Figure(figsize=(6.5, 3.8 + LEGEND_ROW * legend_rows(entries, 2)), layout="constrained")
    ax = fig.subplots()
    for facet, frame in per_run.groupby("facet"):
        s = mean_sd_by(frame, BATCH, "samples_per_second")
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
    colors = colors_for(sizes)
    fig = Figure(figsize=(6.5, 3.8 + LEGEND_ROW * legend_rows(len(sizes), 6)), layout="constrained")
    ax = fig.subplots()
    for size, frame in per_run.groupby(BATCH):
        s = mean_sd_by(frame, "replicas", "samples_per_second")
        ax.errorbar(s["replicas"], s["mean"], yerr=s["std"], fmt="-o", color=colors[size], capsize=3,
                    label=f"batch {size}")
    log2_axis(ax, sorted(per_run["replicas"].unique()))
    ax.set(xlabel="replicas", ylabel="training samples / s", title="throughput vs replicas")
    ax.grid(alpha=0.3)
    legend_below(fig, [Line2D([], [], color=colors[s], marker="o") for s in sizes], [f"batch {s}" for s in sizes],
                 columns=6)
    return fig


def _always(df: pd.DataFrame) -> bool:
    return True


def _has_batch_norm(df: pd.DataFrame) -> bool:
    return "val_acc_precise_bn" in df.columns and df["val_acc_precise_bn"].notna().any()


def _replicas_vary(df: pd.DataFrame) -> bool:
    return "replicas" in df.columns and df["replicas"].nunique() > 1


# (title, plot, data: "epochs" (every row) or "final" (one row per completed run), shown when)
FIGURES = [
    ("Learning curves", learning_curves, "epochs", _always),
    ("Validation accuracy and gap vs batch size", accuracy_vs_batch, "final", _always),
    ("Validation accuracy vs optimizer steps", val_vs_steps, "epochs", _always),
    ("Batch-norm statistics: val_acc with moving vs recomputed statistics", batchnorm_val_vs_steps, "epochs",
     _has_batch_norm),
    ("Throughput", throughput_vs_batch, "epochs", _always),
    ("Throughput vs replicas", throughput_vs_replicas, "epochs", _replicas_vary),
]
CAPTIONS = {  # under each figure, for the reader
    "Learning curves": (
        "Running train accuracy (dotted), post-epoch train accuracy (dashed) and validation accuracy (solid) per "
        "epoch; mean over seeds, grey band ±1 sd."),
    "Validation accuracy and gap vs batch size": (
        "Left: final and best-epoch val_acc; right: train_eval_acc - val_acc at the final epoch. Mean ± sd over "
        "seeds; completed runs only."),
    "Validation accuracy vs optimizer steps": (
        "The same runs against updates instead of epochs: where the curves overlap, a large batch is only behind "
        "in steps, not worse."),
    "Batch-norm statistics: val_acc with moving vs recomputed statistics": (
        "Solid: val_acc as the model is evaluated, with its batch-norm layers' moving averages; dashed: with the "
        "statistics recomputed on 1,024 training samples for the current weights. Where dashed is far above solid "
        "the moving averages lag the weights (few steps, a high momentum); mean over seeds."),
    "Throughput": "Training samples per second, median over each run's epochs after the first.",
    "Throughput vs replicas": "Training samples per second against the number of data-parallel replicas "
                              "(MirroredStrategy).",
}


def figures(a) -> list[tuple[str, Figure, str]]:
    """(title, Figure, caption) of every sweep-wide figure whose data exist, in reading order."""
    drawn = []
    for title, plot, source, shown in FIGURES:
        data = a.final if source == "final" else a.df[a.df["epoch"].notna()]
        if data.empty or not shown(data):
            continue
        fig = plot(data)
        if fig is not None:
            drawn.append((title, fig, CAPTIONS[title]))
    return drawn
