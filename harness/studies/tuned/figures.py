"""The figures of the report's "Learning rate tuned per batch size" section (+study=tuned): pure functions, a
Tuning in, a matplotlib Figure out. Same conventions as harness.render.plots.sweep: legends below, every batch
size a tick."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from harness.assess.analysis import BATCH
from harness.render.plots.style import LEGEND_ROW, legend_below, log2_axis, mean_sd_by
from harness.studies.tuned.reading import RULES, Tuning
from harness.studies.tuned.reading import format_lr as _lr


def selection_heatmap(tuning: Tuning) -> Figure:
    """Mean final tune_acc over seeds for every learning rate (rows, largest on top) x batch size (columns); the
    chosen cell of each batch size outlined, diverged runs counted in the cell."""
    scores = tuning.scores
    lrs = sorted(scores["peak_lr"].unique(), reverse=True)
    sizes = sorted(scores[BATCH].unique())
    grid = np.full((len(lrs), len(sizes)), np.nan)
    for row in scores.itertuples(index=False):
        grid[lrs.index(row.peak_lr), sizes.index(getattr(row, BATCH))] = row.tune_acc
    fig = Figure(figsize=(2.0 + 1.5 * len(sizes), 1.4 + 0.42 * len(lrs)), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", aspect="auto", vmin=np.nanmin(grid),
                      vmax=np.nanmax(grid))
    middle = (np.nanmin(grid) + np.nanmax(grid)) / 2
    for row in scores.itertuples(index=False):
        i, j = lrs.index(row.peak_lr), sizes.index(getattr(row, BATCH))
        text = f"{row.tune_acc:.3f}" + (f"\n{row.diverged} diverged" if row.diverged else "")
        ax.text(j, i, text, ha="center", va="center", fontsize=7.5,
                color="black" if row.tune_acc > middle else "white")
    for choice in tuning.choices:
        i, j = lrs.index(choice.lr), sizes.index(choice.batch)
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#d62728", lw=2.5))
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    ax.set_yticks(range(len(lrs)), [_lr(lr) for lr in lrs])
    ax.set_xlabel("global batch size", fontsize=8)
    ax.set_ylabel("learning rate", fontsize=8)
    ax.set_title("final tune_acc, mean over seeds (red: chosen)", fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.8).ax.tick_params(labelsize=7)
    return fig


def chosen_lr_vs_batch(tuning: Tuning) -> Figure:
    """Left: the chosen learning rate against batch size on log axes, the grid tried in grey, the linear and √
    rules drawn through the smallest batch's choice. Right: final val_acc against batch size at the tuned
    learning rates and at the untuned one (mean ± sd over seeds)."""
    fig = Figure(figsize=(10, 3.9 + LEGEND_ROW), layout="constrained")
    lr_ax, acc_ax = fig.subplots(1, 2)
    sizes = [c.batch for c in tuning.choices]
    for c in tuning.choices:
        lr_ax.plot([c.batch] * len(c.grid), c.grid, "o", ms=4, color="#bbbbbb")
    lr_ax.plot(sizes, [c.lr for c in tuning.choices], "-o", color="#d62728", ms=7, lw=2)
    first = tuning.choices[0]
    span = np.geomspace(sizes[0], sizes[-1], 50)
    for (rule, k), style in zip(RULES.items(), ("--", ":")):
        lr_ax.plot(span, first.lr * (span / first.batch) ** k, style, color="black", lw=1.2)
    lr_ax.set_yscale("log")
    lr_ax.set(xlabel="global batch size", ylabel="learning rate", title="chosen learning rate vs batch size")
    colors = {"tuned": "#d62728", "untuned": "#1f77b4"}
    for arm, frame in tuning.final.groupby("arm"):
        s = mean_sd_by(frame, BATCH, "val_acc")
        acc_ax.errorbar(s[BATCH], s["mean"], yerr=s["std"], fmt="-o", color=colors[arm], capsize=3)
    acc_ax.set(xlabel="global batch size", ylabel="final val_acc", title="val_acc at the tuned and untuned lr")
    for ax in (lr_ax, acc_ax):
        log2_axis(ax, sizes)
        ax.grid(alpha=0.3)
    untuned = "untuned" + (f" ({tuning.untuned} for all)" if tuning.untuned else "")
    handles = [Line2D([], [], color="#d62728", marker="o", lw=2), Line2D([], [], color="#bbbbbb", marker="o", ls=""),
               Line2D([], [], color="black", ls="--"), Line2D([], [], color="black", ls=":"),
               Line2D([], [], color="#1f77b4", marker="o")]
    labels = ["tuned: chosen lr", "learning rates tried", "linear rule (lr ∝ batch)", "√ rule (lr ∝ √batch)",
              untuned]
    legend_below(fig, handles, labels, columns=5)
    return fig


def figures(a) -> list[tuple[str, Figure, str]]:
    """(title, Figure, caption) of the tuned study's figures, for each grid tuned; none for another sweep."""
    drawn = []
    for tuning in a.reading or []:
        where = f" ({tuning.group})" if tuning.group else ""
        drawn += [(f"{title}{where}", fig, caption) for title, fig, caption in _figures(tuning)]
    return drawn


def _figures(tuning: Tuning) -> list[tuple[str, Figure, str]]:
    return [
        ("Selection: tune_acc over learning rate x batch size", selection_heatmap(tuning), (
            "Accuracy on the tuning slice (held out of the training split; never the validation set) after the "
            "last epoch, mean over seeds; a diverged run counts 0. The outlined cell is the learning rate chosen "
            "for that batch size.")),
        ("Chosen learning rate vs batch size", chosen_lr_vs_batch(tuning), (
            "Left: the winner of each batch size (red) among the learning rates tried (grey), with the linear and "
            "√ scaling rules drawn through the smallest batch's winner, on log axes. Right: final val_acc, mean ± "
            "sd over seeds, with each batch size at its chosen learning rate and with all at the untuned one.")),
    ]
