"""The figures of the report's "How far does the batch scale?" section (+study=scaling): pure functions, a Scaling
in, a matplotlib Figure out. Same conventions as harness.render.plots.sweep: legends below, every batch size a
tick, log axes for steps and samples."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from harness.assess.analysis import BATCH
from harness.render.plots.style import LEGEND_ROW, legend_below, log2_axis
from harness.studies.scaling.reading import Scaling

MEASURED, FITTED, NOISE, OTHER = "#d62728", "#1f1f1f", "#1565c0", "#bbbbbb"


def _bands(ax, s: Scaling) -> tuple[list, list]:
    """B_crit (when the fit follows) and B_simple as vertical lines with their intervals shaded."""
    handles, labels = [], []
    fit, noise = s.fit, s.noise
    low, high = ax.get_xlim()
    if fit is not None and fit.follows:
        band = fit.b_crit_interval
        ax.axvspan(max(band.low, low), min(band.high, high), color=FITTED, alpha=0.08)
        ax.axvline(fit.b_crit, color=FITTED, ls="-.", lw=1.2)
        handles += [Line2D([], [], color=FITTED, ls="-.")]
        labels += [f"B_crit (fit) and its {_band(fit.b_crit_interval)}"]
    if noise.value is not None:
        if noise.interval is not None:
            band = noise.interval
            ax.axvspan(max(band.low, low), min(band.high, high), color=NOISE, alpha=0.10)
        if low <= noise.value <= high:
            ax.axvline(noise.value, color=NOISE, ls="--", lw=1.2)
        handles += [Line2D([], [], color=NOISE, ls="--")]
        labels += ["B_simple at the target" + ("" if noise.interval is None else f" and its {_band(noise.interval)}")]
    ax.set_xlim(low, high)
    return handles, labels


def _band(found) -> str:
    return "bootstrap range" if found.level is None else f"{100 * found.level:.0f}% interval"


def steps_and_samples(s: Scaling) -> Figure:
    """Left: steps to target against batch size, log-log: every learning rate's mean in grey, the chosen one's
    in red (seeds' range as bars), the perfect-scaling line through the smallest batch size, the fitted
    S_min(1 + B_crit/B), B_crit and B_simple. Right: samples to target E(B) = B·S(B) with E_min(1 + B/B_crit)."""
    fig = Figure(figsize=(10, 4.0 + 2 * LEGEND_ROW), layout="constrained")
    steps_ax, samples_ax = fig.subplots(1, 2)
    sizes = sorted(int(b) for b in s.runs[BATCH].unique())
    reached = s.runs[s.runs["steps"].notna()]
    cells = reached.groupby([BATCH, "peak_lr"]).agg(steps=("steps", "mean"), samples=("samples", "mean"))
    cells = cells.reset_index()
    steps_ax.plot(cells[BATCH], cells["steps"], "o", ms=4, color=OTHER)
    samples_ax.plot(cells[BATCH], cells["samples"], "o", ms=4, color=OTHER)
    measured = s.measured
    x = np.array([p.batch for p in measured], dtype=float)
    if measured:
        spans = np.array([[p.steps - p.steps_range[0], p.steps_range[1] - p.steps] for p in measured]).T
        steps_ax.errorbar(x, [p.steps for p in measured], yerr=spans, fmt="-o", color=MEASURED, capsize=3, lw=2)
        samples_ax.plot(x, [p.samples for p in measured], "-o", color=MEASURED, lw=2)
        first = measured[0]
        span = np.geomspace(sizes[0], sizes[-1], 60)
        steps_ax.plot(span, first.steps * first.batch / span, ":", color="black", lw=1.2)
        samples_ax.axhline(first.samples, color="black", ls=":", lw=1.2)
        if s.fit is not None:
            style = "-" if s.fit.follows else "--"
            if math.isfinite(s.fit.b_crit):
                steps_ax.plot(span, s.fit.steps(span), style, color=FITTED, lw=1.2)
                samples_ax.plot(span, s.fit.steps(span) * span, style, color=FITTED, lw=1.2)
    for ax in (steps_ax, samples_ax):
        ax.set_yscale("log")
        log2_axis(ax, sizes)
        ax.grid(alpha=0.3, which="both")
    steps_ax.set(xlabel="global batch size", ylabel="steps to target", title="steps to target S(B)")
    samples_ax.set(xlabel="global batch size", ylabel="training samples to target",
                   title="samples to target E(B) = B·S(B)")
    handles, labels = _bands(steps_ax, s)
    _bands(samples_ax, s)
    fit_label = ("fit S_min(1 + B_crit/B)" if s.fit is None or s.fit.follows
                 else "best fit S_min(1 + B_crit/B), not followed")
    handles = [Line2D([], [], color=MEASURED, marker="o", lw=2), Line2D([], [], color=OTHER, marker="o", ls=""),
               Line2D([], [], color="black", ls=":"),
               Line2D([], [], color=FITTED, ls="-" if s.fit is None or s.fit.follows else "--"), *handles]
    labels = ["chosen learning rate (seeds' range)", "other learning rates", "perfect scaling from the smallest batch",
              fit_label, *labels]
    legend_below(fig, handles, labels, columns=3)
    return fig


def accuracy_at_target(s: Scaling) -> Figure:
    """Validation accuracy where the runs reached the target, per batch size at its chosen learning rate (mean
    and 95% interval over seeds)."""
    fig = Figure(figsize=(6.5, 3.4 + LEGEND_ROW), layout="constrained")
    ax = fig.subplots()
    points = [p for p in s.measured if p.val_acc is not None]
    sizes = sorted(int(b) for b in s.runs[BATCH].unique())
    if points:
        means = np.array([p.val_acc for p in points])
        errors = np.array([[p.val_acc - p.val_interval[0], p.val_interval[1] - p.val_acc] if p.val_interval
                           else [0.0, 0.0] for p in points]).T
        ax.errorbar([p.batch for p in points], means, yerr=errors, fmt="-o", color=MEASURED, capsize=3)
    ax.axhline(s.target, color="black", ls=":", lw=1.2)
    log2_axis(ax, sizes)
    ax.grid(alpha=0.3)
    ax.set(xlabel="global batch size", ylabel="val_acc at the target", title="validation accuracy at the target point")
    legend_below(fig, [Line2D([], [], color=MEASURED, marker="o"), Line2D([], [], color="black", ls=":")],
                 ["mean over seeds, 95% interval", f"the target (tune_acc {s.target:g})"], columns=2)
    return fig


def figures(a) -> list[tuple[str, Figure, str]]:
    """(title, Figure, caption) of the scaling study's figures, for each of its curves (one per combination of the
    other varied keys); none for another sweep."""
    drawn = []
    for s in a.reading or []:
        if s.runs.empty:
            continue
        of = f" ({s.group})" if s.group else ""
        drawn += [
            (f"Steps and samples to the target vs batch size{of}", steps_and_samples(s), (
                "Left: steps until the tuning slice's accuracy first reached the target, at each batch size's chosen "
                "learning rate (red; bars: the seeds' range) and at the others tried (grey), on log axes. Dotted: "
                "perfect scaling from the smallest batch size (S ∝ 1/B). Solid: McCandlish's S = S_min(1 + "
                "B_crit/B) fitted (dashed when the points do not follow it). Right: the same runs' training samples "
                "to the target; perfect scaling keeps them flat. Shaded: the 95% intervals of B_crit and of the "
                "noise scale B_simple measured at the target.")),
            (f"Validation accuracy at the target{of}", accuracy_at_target(s), (
                "Validation accuracy at the step each run reached the target on the tuning slice, at each batch "
                "size's chosen learning rate: whether the same training accuracy generalises the same at every "
                "batch size.")),
        ]
    return drawn
