"""The figures of the report's "Why" section: pure functions, a DataFrame in, a matplotlib Figure out.

Same conventions as harness.render.plots.sweep: mean ± sd over seeds, never over a facet; legends below the
plots; wrapped titles; every swept batch size a tick on a log2 axis. `figures` picks those whose data exist.
"""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from harness.assess.analysis import BATCH, facet_order
from harness.assess.why import EMA_BETA, Why
from harness.render.plots import style
from harness.render.plots.sweep import metric_vs_steps

CURVATURE = [("sharpness", "sharpness (ε = 1e-3, %)"), ("hessian_top_eigenvalue", "top Hessian eigenvalue"),
             ("hessian_trace", "Hessian trace")]
MAX_PAIRS = 4  # interpolation pairs drawn; the caption says when there are more


def _log_if_wide(ax, values: pd.Series) -> None:
    """A log y axis when positive values span more than a decade, so a small facet's line is not flattened."""
    values = values.dropna()
    if len(values) and values.min() > 0 and values.max() > 10 * values.min():
        ax.set_yscale("log")


def curvature_vs_batch(probes: pd.DataFrame) -> Figure:
    """Sharpness, top Hessian eigenvalue and Hessian trace of the final weights vs batch size, a line per facet."""
    shown = [(c, label) for c, label in CURVATURE if probes[c].notna().any()]
    facets = facet_order(probes["facet"])
    colors = style.colors_for(facets)
    fig, axes = style.grid(3, len(shown), legend_entries=len(facets) if len(facets) > 1 else 0, sharey=False,
                     panel=(3.6, 2.9))
    sizes = sorted(probes[BATCH].unique())
    for ax, (column, label) in zip(axes, shown):
        for facet, frame in probes.groupby("facet"):
            s = style.mean_sd_by(frame.dropna(subset=[column]), BATCH, column)
            ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt="-o", ms=4, color=colors[facet], capsize=3)
            if column == "hessian_trace" and "trace_stderr" in frame:
                _runs_with_intervals(ax, frame, colors[facet])
        style.log2_axis(ax, sizes)
        shown_values = probes[column]
        if column == "hessian_trace" and "trace_stderr" in probes:  # an interval reaching 0 keeps a linear axis
            shown_values = pd.concat([shown_values, probes[column] - 1.96 * probes["trace_stderr"]])
        _log_if_wide(ax, shown_values)
        ax.set_title(style.wrap(label, 40), fontsize=9)
        ax.set_xlabel("global batch size", fontsize=8)
        ax.grid(alpha=0.3)
    if len(facets) > 1:
        style.legend_below(fig, [Line2D([], [], color=colors[f], marker="o") for f in facets], facets, columns=3)
    return fig


def _runs_with_intervals(ax, frame: pd.DataFrame, color) -> None:
    """Each run's trace beside the seed mean, with its 95% interval (±1.96 standard errors); hollow where the
    estimate stopped at its cap before reaching its tolerance."""
    runs = frame.dropna(subset=["hessian_trace", "trace_stderr"])
    if runs.empty:
        return
    x = runs[BATCH] * 1.12  # just right of the mean on the log2 axis
    ax.errorbar(x, runs["hessian_trace"], yerr=1.96 * runs["trace_stderr"], fmt="none", ecolor=color, alpha=0.45,
                elinewidth=1, capsize=0)
    converged = runs["trace_converged"].fillna(True).astype(bool) if "trace_converged" in runs else True
    ax.scatter(x, runs["hessian_trace"], s=9, edgecolors=color, linewidths=0.8,
               facecolors=[color if c else "none" for c in pd.Series(converged, index=runs.index)])


def _solution(frame: pd.DataFrame, side: str) -> str:
    """'batch 8' when every pair's `side` solution has that batch size, else 'small batch'."""
    sizes = frame[f"{side}_batch"].unique()
    return f"batch {sizes[0]}" if len(sizes) == 1 else f"{side} batch"


def _alpha_ticks(ax, small: str, large: str) -> None:
    """α ticks, with the two solutions named under α = 0 and α = 1."""
    ax.set_xticks([-1, 0, 1, 2], ["−1", f"0\n{small}", f"1\n{large}", "2"], fontsize=8)
    for alpha in (0, 1):
        ax.axvline(alpha, color="gray", lw=0.8, ls=":")


def first_pairs(frame: pd.DataFrame) -> list[str]:
    """The MAX_PAIRS pairs drawn: the first pair of every facet (by its `facet` column), then the second, ..."""
    pairs = frame.drop_duplicates("pair")
    facets = pairs["facet"] if "facet" in pairs else pd.Series(0, index=pairs.index)
    order = pairs.assign(rank=facets.groupby(facets).cumcount()).sort_values("rank", kind="stable")
    return order["pair"].tolist()[:MAX_PAIRS]


def interpolation(frame: pd.DataFrame) -> Figure:
    """Loss and accuracy along the line from the small-batch (α = 0) to the large-batch solution (α = 1), train
    solid and validation dashed, a colour per pair (at most MAX_PAIRS, see first_pairs)."""
    pairs = first_pairs(frame)
    colors = style.colors_for(pairs)
    fig = Figure(figsize=(10, 3.9 + style.LEGEND_ROW * style.legend_rows(len(pairs) + 2, 3)), layout="constrained")
    loss_ax, acc_ax = fig.subplots(1, 2)
    for pair in pairs:
        curve = frame[frame["pair"] == pair]
        for ax, metric in ((loss_ax, "loss"), (acc_ax, "acc")):
            ax.plot(curve["alpha"], curve[f"train_{metric}"], "-", color=colors[pair], lw=1.4)
            ax.plot(curve["alpha"], curve[f"val_{metric}"], "--", color=colors[pair], lw=1.4)
    for ax, title in ((loss_ax, "loss along the line"), (acc_ax, "accuracy along the line")):
        _alpha_ticks(ax, _solution(frame, "small"), _solution(frame, "large"))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("α (w = (1 − α)·w_small + α·w_large)", fontsize=8)
        ax.grid(alpha=0.3)
    if (frame["train_loss"] > 0).all() and (frame["val_loss"] > 0).all():
        loss_ax.set_yscale("log")  # the loss explodes away from both solutions
    loss_ax.set_ylabel("cross-entropy loss")
    acc_ax.set_ylabel("accuracy")
    handles = [Line2D([], [], color="black", ls="-"), Line2D([], [], color="black", ls="--")]
    handles += [Line2D([], [], color=colors[p], lw=3) for p in pairs]
    style.legend_below(fig, handles, ["train", "validation", *pairs], columns=3)
    return fig


def noise_scale_over_training(epochs: pd.DataFrame) -> Figure:
    """The smoothed noise scale per epoch, a line per batch size (mean over seeds), a panel per facet; each
    swept batch size drawn as a horizontal line in its colour, so the curve of batch N meets its own line."""
    epochs = epochs[epochs["noise_scale_smoothed"] > 0]
    facets = facet_order(epochs["facet"])
    sizes = sorted(epochs[BATCH].unique())
    colors = style.colors_for(sizes)
    lines = max((style.wrap(f, 44).count("\n") + 1 for f in facets), default=1)
    fig, axes = style.grid(3, len(facets), legend_entries=len(sizes), panel=(4.2, 3.2), title_lines=lines)
    for ax, facet in zip(axes, facets):
        cell = epochs[epochs["facet"] == facet]
        for size in sizes:
            run = cell[cell[BATCH] == size]
            if not run.empty:
                s = run.groupby("epoch")["noise_scale_smoothed"].mean()
                ax.plot(s.index, s.values, "-o", ms=2.5, color=colors[size])
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        ax.set_ylim(min(low, sizes[0] / 1.5), max(high, sizes[-1] * 1.5))
        for size in sizes:
            ax.axhline(size, color=colors[size], lw=0.8, ls=":")
            # named beyond the right spine, where no curve runs
            ax.text(1.02, size, f"batch {size}", transform=ax.get_yaxis_transform(), ha="left", va="center",
                    fontsize=7, color=colors[size], clip_on=False)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=6))
        ax.set_xlabel("epoch", fontsize=8)
        ax.set_title(style.wrap(facet, 44) if len(facets) > 1 else "noise scale over training", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("B_simple = tr(Σ) / |G|²")
    style.legend_below(fig, [Line2D([], [], color=colors[s], marker="o") for s in sizes], [f"batch {s}" for s in sizes],
                 columns=6)
    return fig


def distance_vs_steps(epochs: pd.DataFrame) -> Figure:
    """‖w_t − w_0‖ against optimizer steps (log axis), a line per batch size (mean ± sd), a panel per facet."""
    return metric_vs_steps(epochs[epochs["weight_distance"].notna()], "weight_distance", "‖w_t − w_0‖₂",
                           "distance from initialisation", band=True)


def figures(a) -> list[tuple[str, Figure, str]]:
    """(title, Figure, caption) for each Why figure whose data exist, in reading order."""
    why: Why = a.why
    drawn = []
    if not why.probes.empty:
        drawn.append(("Sharpness of the final minimum vs batch size", curvature_vs_batch(why.probes), (
            "Keskar et al.'s sharpness (metric 2.1: the largest loss increase, in percent, within a box of relative "
            "size ε = 1e-3 around the final weights), the Hessian's top eigenvalue and its trace (a Lanczos sketch, "
            "Rayleigh-Ritz for the eigenvalue, Hutchinson on the rest of the trace), on the training loss of the "
            "final weights; lines: mean ± sd over seeds. Trace dots: each run's estimate with its 95% interval "
            "(±1.96 standard errors), hollow where it stopped at its cap above a 5% standard error.")))
    if why.interpolation is not None and not why.interpolation.empty:
        count = why.interpolation["pair"].nunique()
        shown = "" if count <= MAX_PAIRS else f" {MAX_PAIRS} of {count} pairs are drawn, taking each facet in turn."
        drawn.append(("Between the two solutions", interpolation(why.interpolation), (
            "Loss and accuracy of the weights (1 − α)·w_small + α·w_large, train "
            "solid and validation dashed (Keskar et al. 2017, Fig. 3); every weight is interpolated, batch-norm "
            "statistics too. A sharp minimum shows as a narrow "
            f"valley around its α.{shown}")))
    if "noise_scale_smoothed" in why.epochs and (why.epochs["noise_scale_smoothed"] > 0).any():
        drawn.append(("Gradient noise scale over training", noise_scale_over_training(why.epochs), (
            "B_simple = tr(Σ)/|G|² (McCandlish et al. 2018), tr(Σ) and |G|² smoothed separately across each run's "
            f"epochs with a bias-corrected EMA (β = {EMA_BETA} per epoch), as gpt-neox does across steps; mean over "
            "seeds. Dotted lines: the swept batch sizes. A batch above the noise scale gains little per step.")))
    if "weight_distance" in why.epochs and why.epochs["weight_distance"].notna().any():
        drawn.append(("Distance from the initial weights", distance_vs_steps(why.epochs), (
            "‖w_t − w_0‖₂ after each epoch against optimizer steps, mean ± sd over seeds: in the same epochs "
            "a large batch takes fewer steps and travels less far (Hoffer et al. 2017).")))
    return drawn
