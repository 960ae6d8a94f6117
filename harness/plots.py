"""Pure plot functions: a tidy DataFrame in, a matplotlib Figure out (no pyplot, no global state).

Frames carry a `facet` column (one label per combination of varied keys); lines are averaged over seeds only,
never over a facet, and spread bands or error bars span ±1 standard deviation over seeds.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.analysis import BATCH

CURVES = [("train_acc", "train_acc (running, during epoch)", ":"),
          ("train_eval_acc", "train_eval_acc (after epoch)", "--"),
          ("val_acc", "val_acc", "-")]


def _colors(labels) -> dict:
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
    return {label: palette[i % len(palette)] for i, label in enumerate(labels)}


def _mean_sd(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    summary = frame.groupby(x)[y].agg(["mean", "std", "count"]).reset_index()
    summary["std"] = summary["std"].fillna(0.0)
    return summary


def _log2_axis(ax, sizes) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.minorticks_off()


def learning_curves(df: pd.DataFrame) -> Figure:
    """Running train, post-epoch train and validation accuracy per epoch: a panel per (facet, batch size)."""
    epochs = df[df["epoch"].notna()]
    facets, sizes = sorted(epochs["facet"].unique()), sorted(epochs[BATCH].unique())
    cols = min(len(sizes), 4)
    rows = len(facets) * math.ceil(len(sizes) / cols)
    fig = Figure(figsize=(3.2 * cols, 2.6 * rows + 0.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)).ravel()
    for ax in axes:
        ax.set_visible(False)
    panel = 0
    for facet in facets:
        for i, size in enumerate(sizes):
            ax = axes[panel + i]
            cell = epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)]
            if cell.empty:
                continue
            ax.set_visible(True)
            for column, label, style in CURVES:
                stats = _mean_sd(cell, "epoch", column)
                ax.plot(stats["epoch"], stats["mean"], style, color="black" if column == "val_acc" else "#1f77b4",
                        label=label)
                ax.fill_between(stats["epoch"], stats["mean"] - stats["std"], stats["mean"] + stats["std"],
                                alpha=0.15, color="gray")
            seeds = cell["run_id"].nunique()
            ax.set_title(f"batch {size}" + (f" | {facet}" if len(facets) > 1 else "") + f" (n={seeds})",
                         fontsize=9)
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        panel += math.ceil(len(sizes) / cols) * cols
    visible = [ax for ax in axes if ax.get_visible()]
    if visible:
        visible[0].set_ylabel("accuracy")
        visible[-1].set_xlabel("epoch")
        handles, labels = visible[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)
    return fig


def accuracy_vs_batch(final: pd.DataFrame) -> Figure:
    """Final and best val_acc vs batch size, and the gap train_eval_acc - val_acc, mean ± sd over seeds."""
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    acc_ax, gap_ax = fig.subplots(1, 2)
    sizes = sorted(final[BATCH].unique())
    colors = _colors(sorted(final["facet"].unique()))
    for facet, frame in final.groupby("facet"):
        for column, style, name in [("val_acc", "-o", "final"), ("best_val_acc", "--s", "best epoch")]:
            s = _mean_sd(frame, BATCH, column)
            acc_ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt=style, color=colors[facet], capsize=3,
                            label=f"{name} val_acc" + (f" | {facet}" if len(colors) > 1 else ""))
        s = _mean_sd(frame, BATCH, "gap")
        gap_ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt="-o", color=colors[facet], capsize=3,
                        label=facet)
    acc_ax.set(xlabel="global batch size", ylabel="validation accuracy", title="val_acc vs batch size")
    gap_ax.set(xlabel="global batch size", ylabel="train_eval_acc - val_acc", title="generalization gap")
    gap_ax.axhline(0, color="gray", lw=0.8)
    for ax in (acc_ax, gap_ax):
        if sizes:
            _log2_axis(ax, sizes)
        ax.grid(alpha=0.3)
    acc_ax.legend(fontsize=8)
    if len(colors) > 1:
        gap_ax.legend(fontsize=8)
    return fig


def val_vs_steps(df: pd.DataFrame) -> Figure:
    """Validation accuracy against optimizer steps (log scale), one line per batch size: the steps-matched view."""
    epochs = df[df["epoch"].notna()]
    facets = sorted(epochs["facet"].unique())
    fig = Figure(figsize=(5.5 * min(len(facets), 2), 3.6 * math.ceil(len(facets) / 2)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(math.ceil(len(facets) / 2), min(len(facets), 2), sharey=True,
                                      squeeze=False)).ravel()
    sizes = sorted(epochs[BATCH].unique())
    colors = _colors(sizes)
    for ax, facet in zip(axes, facets):
        for size in sizes:
            cell = epochs[(epochs["facet"] == facet) & (epochs[BATCH] == size)]
            if not cell.empty:
                s = _mean_sd(cell, "step", "val_acc")
                ax.plot(s["step"], s["mean"], "-o", ms=2.5, color=colors[size], label=f"batch {size}")
        ax.set_xscale("log")
        ax.set(xlabel="optimizer steps", ylabel="val_acc", title=facet if len(facets) > 1 else "val_acc vs steps")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes[len(facets):]:
        ax.set_visible(False)
    return fig


def _throughput_per_run(df: pd.DataFrame, by: str) -> pd.DataFrame:
    """Each run's median samples/s over its epochs after the first (which includes tracing)."""
    epochs = df[df["epoch"].notna()]
    warm = epochs[(epochs["epoch"] > 1) | (epochs.groupby("run_id")["epoch"].transform("max") == 1)]
    return warm.groupby(["run_id", by, BATCH])["samples_per_second"].median().reset_index()


def throughput_vs_batch(df: pd.DataFrame) -> Figure:
    """Training samples per second (median over a run's epochs after the first) vs batch size."""
    per_run = _throughput_per_run(df, "facet")
    fig = Figure(figsize=(5.5, 3.6), layout="constrained")
    ax = fig.subplots()
    colors = _colors(sorted(per_run["facet"].unique()))
    for facet, frame in per_run.groupby("facet"):
        s = _mean_sd(frame, BATCH, "samples_per_second")
        ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt="-o", color=colors[facet], capsize=3, label=facet)
    sizes = sorted(per_run[BATCH].unique())
    if sizes:
        _log2_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set(xlabel="global batch size", ylabel="training samples / s", title="throughput")
    ax.grid(alpha=0.3)
    if len(colors) > 1:
        ax.legend(fontsize=8)
    return fig


def throughput_vs_replicas(df: pd.DataFrame) -> Figure:
    """Training samples per second vs replica count, one line per global batch size."""
    per_run = _throughput_per_run(df, "replicas")
    fig = Figure(figsize=(5.5, 3.6), layout="constrained")
    ax = fig.subplots()
    sizes = sorted(per_run[BATCH].unique())
    colors = _colors(sizes)
    for size, frame in per_run.groupby(BATCH):
        s = _mean_sd(frame, "replicas", "samples_per_second")
        ax.errorbar(s["replicas"], s["mean"], yerr=s["std"], fmt="-o", color=colors[size], capsize=3,
                    label=f"batch {size}")
    replicas = sorted(per_run["replicas"].unique())
    _log2_axis(ax, replicas)
    ax.set(xlabel="replicas", ylabel="training samples / s", title="throughput vs replicas")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
