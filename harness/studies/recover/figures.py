"""The figures of the report's "Recovery" section (+study=recover): val_acc by epoch for b as it is, B as it is and
B with the recipe (mean over seeds, a band from the lowest seed to the highest), the trials' tune_acc against
their peak learning rate by optimizer, and the knobs' importance with its spread. Pure: an Assessment in,
matplotlib Figures out; conventions of harness.render.plots.style."""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from harness.assess.analysis import BATCH
from harness.render.plots.style import LEGEND_ROW, PALETTE, legend_below, wrap

MARKERS = "osD^v<>p"


def figures(a) -> list[tuple[str, Figure, str]]:
    r = a.reading
    if r is None:
        return []
    drawn = []
    curves = val_by_epoch(a)
    if curves is not None:
        drawn.append(("val_acc by epoch: as they are, and batch B with the recipe", curves,
                      "Mean over seeds; the band runs from the lowest seed to the highest."))
    trials = trials_vs_lr(a)
    if trials is not None:
        drawn.append(("The search: each trial's tune_acc against its peak learning rate", trials,
                      f"One run per trial, at batch {r.large_batch} and seed {r.seeds[0]}; marker: optimizer (the "
                      "guided round's apart), or the published rule."))
    if r.importance is not None:
        drawn.append(("What mattered in the search", importance(r.importance),
                      "Permutation importance of a random forest fitted to the trials; the bar's line is its "
                      "spread over forests and permutations."))
    return drawn


def val_by_epoch(a) -> Figure | None:
    """b as it is (or with its own recipe), B as it is and B with the recipe (the reading's recipe, or the search's
    best before round 2)."""
    r = a.reading
    trial = r.recipe if r.recipe is not None else r.best
    df = a.df[a.df["status"] != "paused"]  # a trial's run paused at a rung: its continuation holds those epochs too
    small = (f"batch {r.small_batch} as is", df[(df["facet"] == "as is") & (df[BATCH] == r.small_batch)])
    if r.small_arm is not None:  # recover.tune_small: b with its own recipe is what B is compared with
        small = (f"batch {r.small_batch}, its own recipe (trial {r.small_recipe})",
                 df[df["facet"] == r.small_arm.replace("_", " ")])
    lines = [small,
             (f"batch {r.large_batch} as is", df[(df["facet"] == "as is") & (df[BATCH] == r.large_batch)])]
    if trial is not None:
        lines.append((f"batch {r.large_batch}, recipe (trial {trial})", df[df["facet"] == f"trial {trial}"]))
    lines = [(label, rows) for label, rows in lines if not rows.empty]
    if not lines:
        return None
    fig = Figure(figsize=(7.0, 3.6 + LEGEND_ROW), layout="constrained")
    ax = fig.subplots()
    for (label, rows), color in zip(lines, PALETTE):
        by = rows.groupby("epoch")["val_acc"].agg(["mean", "min", "max"]).reset_index()
        ax.plot(by["epoch"], by["mean"], "-o", ms=3, color=color, label=label)
        ax.fill_between(by["epoch"], by["min"], by["max"], color=color, alpha=0.18, linewidth=0)
    ax.set_xlabel("epoch", fontsize=8)
    ax.set_ylabel("val_acc", fontsize=8)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    legend_below(fig, handles, labels, columns=3)
    return fig


def _kind(trial, optimizer) -> str:
    """A point's legend entry: a rule's name, a searched trial's optimizer."""
    if trial.source == "rule":
        return f"the {trial.rule} rule"
    return f"{optimizer} (guided)" if trial.source == "guided" else str(optimizer)


def trials_vs_lr(a) -> Figure | None:
    """Each finished trial's tune_acc at its peak learning rate (log axis), marker by optimizer (a rule's its own);
    the recipe ringed."""
    r = a.reading
    df = a.df
    rows = df[df["facet"].str.startswith("trial ") & (df["seed"] == r.seeds[0])]
    finals = rows.sort_values("epoch").groupby("facet").tail(1)
    done = {t.number: t for t in r.trials if t.tune_acc is not None}
    points = [(number, float(row["peak_lr"]), _kind(done[number], row.get("optimizer")), done[number].tune_acc)
              for row in finals.to_dict("records")
              for number in [int(row["facet"].split()[1])] if number in done]
    if len(points) < 2:
        return None
    optimizers = list(dict.fromkeys(p[2] for p in points))
    fig = Figure(figsize=(7.0, 3.6 + LEGEND_ROW), layout="constrained")
    ax = fig.subplots()
    for i, name in enumerate(optimizers):
        mine = [p for p in points if p[2] == name]
        ax.scatter([p[1] for p in mine], [p[3] for p in mine], marker=MARKERS[i % len(MARKERS)],
                   color=PALETTE[i % len(PALETTE)], s=28, zorder=3)
    handles = [Line2D([], [], marker=MARKERS[i % len(MARKERS)], color=PALETTE[i % len(PALETTE)], linestyle="",
                      label=name) for i, name in enumerate(optimizers)]
    chosen = r.recipe if r.recipe is not None else r.best
    for number, lr, _, tune in points:
        if number == chosen:
            ax.scatter([lr], [tune], s=140, facecolors="none", edgecolors="black", linewidths=1.2, zorder=4)
            handles.append(Line2D([], [], marker="o", markerfacecolor="none", markeredgecolor="black", linestyle="",
                                  label=f"the recipe (trial {number})"))
    if r.reference.get("b") is not None:
        ax.axhline(r.reference["b"], color="#555555", linestyle="--", linewidth=1)
        handles.append(Line2D([], [], color="#555555", linestyle="--", label=f"batch {r.small_batch} as is"))
    ax.set_xscale("log")
    ax.set_xlabel("peak learning rate", fontsize=8)
    ax.set_ylabel("final tune_acc", fontsize=8)
    ax.grid(alpha=0.3)
    legend_below(fig, handles, [h.get_label() for h in handles], columns=4)
    return fig


def importance(found) -> Figure:
    """Each knob's permutation importance (mean over forests and permutations), its spread as a line."""
    keys = list(reversed(found.keys))
    fig = Figure(figsize=(7.0, 1.0 + 0.32 * len(keys)), layout="constrained")
    ax = fig.subplots()
    ax.barh(range(len(keys)), [k.mean for k in keys], xerr=[k.sd for k in keys], color=PALETTE[0], capsize=3)
    ax.set_yticks(range(len(keys)), [wrap(k.key, 20) for k in keys], fontsize=8)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel("drop in R² of tune_acc when the knob is shuffled", fontsize=8)
    ax.grid(alpha=0.3, axis="x")
    return fig
