"""The diagnosis as a waterfall: val_acc at the small batch, down through each part of the drop (with its 95%
interval over paired seeds), to val_acc at the large batch. Pure: a harness.studies.diagnose.reading.Diagnosis in, a
matplotlib Figure out."""
from __future__ import annotations

import math

from matplotlib.figure import Figure

from harness.render.plots.style import wrap

LABELS = {"stale_statistics": "stale batch-norm statistics", "fewer_updates": "fewer updates",
          "learning_rate": "learning rate", "ghost_batch_norm": "ghost batch norm", "remains": "remains"}
LEVEL, LOST, GAINED = "#555555", "#d62728", "#2ca02c"


def waterfall(d) -> Figure | None:
    """None before any seed has a finished run in every arm."""
    if d.drop is None or d.drop.value is None or "b" not in d.arm_values:
        return None
    start = d.arm_values["b"][0]
    names = [f"val_acc at batch {d.small_batch}", *(LABELS[p.name] for p in d.parts),
             f"val_acc at batch {d.large_batch}"]
    fig = Figure(figsize=(max(6.0, 1.25 * len(names)), 3.9), layout="constrained")
    ax = fig.subplots()
    level, lows, highs = start, [start], [start]
    ax.bar(0, start, color=LEVEL, width=0.6)
    ax.text(0, start, f"{start:.3f}", ha="center", va="bottom", fontsize=8)
    for x, part in enumerate(d.parts, start=1):
        value = part.estimate.value
        if value is None:
            ax.text(x, level, "not\nmeasured", ha="center", va="bottom", fontsize=7.5, color="#777777")
            continue
        bottom = level - value
        ax.bar(x, value, bottom=bottom, color=LOST if value > 0 else GAINED, width=0.6)
        if part.estimate.low is not None:  # the interval of the part, at the end the bar reaches
            ax.errorbar(x, bottom, yerr=[[part.estimate.high - value], [value - part.estimate.low]], color="black",
                        capsize=3, linewidth=1)
            lows.append(level - part.estimate.high)
            highs.append(level - part.estimate.low)
        ax.text(x + 0.33, (level + bottom) / 2, f"{value:+.3f}", ha="left", va="center", fontsize=7.5)
        level = bottom
        lows.append(level)
        highs.append(level)
    end = d.arm_values["B"][0]
    ax.bar(len(names) - 1, end, color=LEVEL, width=0.6)
    ax.text(len(names) - 1, end, f"{end:.3f}", ha="center", va="bottom", fontsize=8)
    # the whole path: a part larger than the level above it runs below 0 (both sizes near chance, a part of each
    # sign), and the axis follows it there, with room for the labels above the levels
    finite = [v for v in (*lows, *highs, start, end) if math.isfinite(v)]
    span = max(finite) - min(finite) or 0.05
    low, high = min(finite) - 0.12 * span, max(finite) + 0.18 * span
    ax.set_ylim(max(0.0, low) if min(finite) >= 0 else low, high)
    if min(finite) < 0:
        ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)), [wrap(n, 14) for n in names], fontsize=8)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylabel("val_acc")
    ax.grid(alpha=0.3, axis="y")
    return fig


def figures(a) -> list[tuple[str, Figure, str]]:
    """(title, Figure, caption) of the diagnosis's waterfall, for a diagnose sweep."""
    fig = None if a.reading is None else waterfall(a.reading)
    if fig is None:
        return []
    d = a.reading
    caption = (f"From val_acc at batch {d.small_batch} (left) down to val_acc at batch {d.large_batch} (right): each "
               "bar is a part of the drop, red where it lowered val_acc, green where it raised it, mean over the "
               f"{len(d.seeds)} seed(s) complete in every arm, with its 95% interval over paired seeds (none with one "
               "seed). The parts add up to the drop exactly.")
    return [("The drop, part by part", fig, caption)]
