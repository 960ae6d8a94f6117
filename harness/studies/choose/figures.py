"""The figure of the report's "Which batch size?" section (+study=choose): a pure function, a Choice in, a matplotlib
Figure out. Left, each batch size's time to the target (its best, median over seeds, the median's interval as a bar)
and b's as it is, and each ramp's time as a level (a schedule has no one batch size); middle, each one's throughput
measured alone; right, its steps to the target with the perfect-scaling line through b as it is. Log axes, every
batch size a tick, legends below."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from harness.render.plots.style import LEGEND_ROW, legend_below, legend_rows, log2_axis
from harness.studies.choose.words import candidate_text

BEST, BASE, ANSWER, RAMP = "#1565c0", "#1f1f1f", "#d62728", "#2e7d32"


def figures(a) -> list:
    found = a.reading
    if found is None or found.answer is None:
        return []
    return [("Time to the target, throughput and steps at every batch size", time_and_steps(found),
             f"Each batch size's best recipe, timed alone on this machine; bars: the median's "
             f"{found.answer.base.interval.label} over seeds (time) and the seeds' range (steps).")]


def time_and_steps(found) -> Figure:
    answer = found.answer
    ramps = [t for t in answer.timed if t.ramp and np.isfinite(t.median)]  # a schedule: a level, not a point
    fig = Figure(figsize=(12, 3.8 + LEGEND_ROW * legend_rows(4 + len(ramps))), layout="constrained")
    time_ax, speed_ax, steps_ax = fig.subplots(1, 3)
    base = answer.base  # a point of its own where b's best is another recipe
    fixed = [t for t in answer.timed if not t.ramp]
    timed = [t for t in fixed if t is not base or not any(o.size == t.size and o is not t for o in fixed)]
    sizes = [t.size for t in timed]
    finite = [t for t in timed if np.isfinite(t.median)]
    x = np.array([t.size for t in finite], dtype=float)
    medians = np.array([t.median for t in finite])
    spans = np.array([[t.median - t.interval.low, min(t.interval.high, 10 * t.median) - t.median] for t in finite]).T
    time_ax.errorbar(x, medians, yerr=spans, fmt="-o", color=BEST, capsize=3, lw=2)
    time_ax.plot([answer.base.size], [answer.base.median], "s", color=BASE, ms=8, mfc="none", mew=1.5)
    for t in ramps:
        time_ax.axhline(t.median, color=RAMP, ls="--", lw=1.5)
    if not answer.best.ramp:
        time_ax.plot([answer.size], [answer.best.median], "*", color=ANSWER, ms=14)
    time_ax.set(xscale="log", yscale="log", xlabel="batch size", ylabel="seconds to the target",
                title="time to the target")
    time_ax.margins(y=0.12)  # b as it is often sits at the top
    measured = [t for t in timed if np.isfinite(t.throughput) and t.throughput > 0]  # none where every seed missed
    speed_ax.plot([t.size for t in measured], [t.throughput for t in measured], "-o", color=BEST, lw=2)
    speed_ax.set(xscale="log", yscale="log" if measured else "linear", xlabel="batch size",
                 ylabel="training samples / second",
                 title="throughput to the target, alone")
    steps = [np.nanmedian(np.where(np.isfinite(t.steps), t.steps, np.nan)) for t in timed]
    low = [np.nanmin(np.where(np.isfinite(t.steps), t.steps, np.nan)) for t in timed]
    high = [np.nanmax(np.where(np.isfinite(t.steps), t.steps, np.nan)) for t in timed]
    steps_ax.errorbar(sizes, steps, yerr=[np.subtract(steps, low), np.subtract(high, steps)], fmt="-o", color=BEST,
                      capsize=3, lw=2)
    base_steps = np.nanmedian(np.where(np.isfinite(base.steps), base.steps, np.nan))
    steps_ax.plot(sizes, [base_steps * base.size / size for size in sizes], ":", color=BASE)
    steps_ax.set(xscale="log", yscale="log", xlabel="batch size", ylabel="steps to the target",
                 title="steps to the target")
    for ax in (time_ax, speed_ax, steps_ax) if measured else (time_ax, steps_ax):
        log2_axis(ax, sizes)
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # a label within any range, however short
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="major", alpha=0.3)
    legend_below(fig, [Line2D([], [], color=BEST, marker="o", lw=2), Line2D([], [], color=BASE, marker="s",
                                                                          mfc="none", ls=""),
                       Line2D([], [], color=ANSWER, marker="*", ms=12, ls=""), Line2D([], [], color=BASE, ls=":")]
                 + [Line2D([], [], color=RAMP, ls="--", lw=1.5) for _ in ramps],
                 ["each batch size's best recipe", f"batch {answer.base.size} as it is", "the answer",
                  f"perfect scaling from batch {answer.base.size}"]
                 + [f"{'the answer, ' if t is answer.best else ''}{candidate_text(t)}: its time" for t in ramps])
    return fig
