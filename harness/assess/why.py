"""Why did the large batch lose? The probes' measurements, read from a sweep's files, and what they say.

The training side (probes=true) writes three things, read here without TensorFlow:
- per-epoch columns of metrics.parquet: `noise_scale` (B_simple = tr(Σ)/|G|², McCandlish et al. 2018),
  `grad_norm_sq` (|G|²), `grad_trace_cov` (tr(Σ)) and `weight_distance` (‖w_t − w_0‖₂);
- `probes.json` in a run folder, after the last epoch: the top Hessian eigenvalue, the Hessian trace and Keskar
  et al.'s sharpness (metric 2.1, percent units) of the final weights;
- `interpolation.parquet` in the sweep folder: loss and accuracy along w(α) = (1 − α)·w_small + α·w_large
  (Keskar et al. 2017, Fig. 3).

Sentences compare the smallest and the largest batch size of each facet, averaged over seeds. A sharpness
difference is a ratio of the two minima's top Hessian eigenvalues with its interval on the log scale (Welch's, on
the seeds' log eigenvalues, at 1 - ALPHA: tests/assess/test_why.py checks its coverage at 3 seeds), claimed where
the interval excludes 1 when both sides have two or more seeds, and with the ratio SINGLE_SEED_RATIO otherwise,
which is said to be indicative only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from harness.assess.analysis import BATCH, facet_order
from harness.assess.intervals import welch_interval
from harness.assess.sweep import Sweep
from harness.probes import curvature
from harness.store import probes_file
from harness.store.files import DamagedFile
from harness.store.layout import INTERPOLATION_FILE

EPOCH_PROBES = ["noise_scale", "grad_norm_sq", "grad_trace_cov", "weight_distance"]
FINAL_PROBES = list(probes_file.MEASURES)
INTERPOLATION_COLUMNS = ["pair", "small_run", "small_batch", "large_batch", "alpha", "train_loss", "train_acc",
                         "val_loss", "val_acc"]
# Smoothing of tr(Σ) and |G|² across a run's epochs, each on its own, as gpt-neox does across steps (β = 0.99
# there, over thousands of steps; one estimate per epoch here, so the memory is a couple of epochs).
EMA_BETA = 0.5
ALPHA = 0.05               # 1 - the level of the eigenvalues' ratio interval
SINGLE_SEED_RATIO = 1.5    # with one seed a side: a ratio at least this large (or its inverse) is a difference
NO_PROBES = ("No probe measurements in this sweep ({why}): run it with probes=true to see the sharpness of each "
             "minimum, the gradient noise scale and the distance each batch size travelled.")


@dataclass
class Reading:
    """What the probes say about one facet: a sentence per measurement."""

    subject: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Why:
    """The probes of one sweep and what they say; empty frames where a probe was not run."""

    probes: pd.DataFrame                # one row per run with a usable probes.json, with its final metrics row
    epochs: pd.DataFrame                # per-epoch rows with probe values and `noise_scale_smoothed`
    interpolation: pd.DataFrame | None  # interpolation.parquet, None when absent or unreadable
    readings: list[Reading]
    notes: list[str]                    # files skipped, probes that failed or did not converge, or why none exist


def ema(values: pd.Series, beta: float = EMA_BETA) -> pd.Series:
    """Exponential moving average from zero with the bias correction 1/(1 − β^k) (gpt-neox's `ema`), k counting
    the values seen; a missing value leaves the average where it was."""
    average, seen, out = 0.0, 0, []
    for value in values:
        if not pd.isna(value):
            average, seen = beta * average + (1 - beta) * float(value), seen + 1
        out.append(average / (1 - beta ** seen) if seen else math.nan)
    return pd.Series(out, index=values.index, dtype=float)


def smoothed_noise_scale(run: pd.DataFrame, beta: float = EMA_BETA) -> pd.Series:
    """B_simple of one run's epochs (in epoch order) with tr(Σ) and |G|² smoothed separately: averaging the two
    estimates before dividing keeps a noisy or negative |G|² estimate from blowing the ratio up."""
    trace, norm = ema(run["grad_trace_cov"], beta), ema(run["grad_norm_sq"], beta)
    return (trace / norm).where(norm > 0)


def read_probes(sweep: Sweep, df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per run with a usable probes.json: its final metrics row (config, batch size, facet) with the probe
    values on top. A damaged file or a failed probe is left out with a note, never an error."""
    last = df[df["epoch"].notna()].sort_values("epoch").groupby("run_id").tail(1).set_index("run_id")
    rows, notes = [], []
    for record in sweep.records:
        run_id = record["run_id"]
        try:
            probes = sweep.probes(record["job"])
        except DamagedFile as err:
            notes.append(f"Left out: {err}.")
            continue
        if probes is None or run_id not in last.index:
            continue
        if probes.get("error"):
            notes.append(f"The final probe of {run_id} failed: {probes['error']}")
            continue
        rows.append({**last.loc[run_id].to_dict(), **probes, "run_id": run_id})
    frame = pd.DataFrame(rows)
    for column in FINAL_PROBES:
        frame[column] = pd.to_numeric(frame[column], errors="coerce") if column in frame else math.nan
    if "trace_stderr" in frame:
        frame["trace_stderr"] = pd.to_numeric(frame["trace_stderr"], errors="coerce")
    return frame, notes + estimate_notes(frame)


def _runs(frame: pd.DataFrame, mask: pd.Series) -> str:
    chosen = frame.loc[mask, "run_id"].tolist()
    return f"{len(chosen)} of {len(frame)} runs ({', '.join(chosen)})"


def estimate_notes(probes: pd.DataFrame) -> list[str]:
    """What the report must say about estimates that did not reach their tolerance or cannot be read: never
    clamped, never dropped without a word."""
    notes = []
    if "eigen_converged" in probes:
        unconverged = probes["eigen_converged"] == False  # noqa: E712 (NaN, an older file's, is neither)
        if unconverged.any():
            notes.append(f"The top eigenvalue's error bound stayed above {curvature.EIGEN_TOLERANCE:g} of it for "
                         f"{_runs(probes, unconverged)}: an estimate of lower precision (a lower bound).")
    if "trace_converged" in probes:
        unconverged = probes["trace_converged"] == False  # noqa: E712
        if unconverged.any():
            worst = (probes.loc[unconverged, "trace_stderr"] / probes.loc[unconverged, "hessian_trace"].abs()).max()
            notes.append(f"The Hessian trace did not reach a standard error of {curvature.TRACE_ERROR:.0%} within its "
                         f"cap of Hessian-vector products for {_runs(probes, unconverged)} (up to {worst:.0%}).")
    if "trace_stderr" in probes:
        spans = probes["hessian_trace"].abs() < 1.96 * probes["trace_stderr"]
        if spans.any():
            shown = "; ".join(f"{r.run_id}: {number(r.hessian_trace)} ± {number(1.96 * r.trace_stderr)}"
                              for r in probes[spans].itertuples())
            notes.append(f"The Hessian trace is inconclusive for {_runs(probes, spans)}: its 95% interval spans zero "
                         f"({shown}).")
    return notes


def read_interpolation(sweep_dir: Path) -> tuple[pd.DataFrame | None, list[str]]:
    """The sweep's interpolation.parquet, or None (with a note when it exists but cannot be used)."""
    path = Path(sweep_dir) / INTERPOLATION_FILE
    if not path.exists():
        return None, []
    try:
        frame = pd.read_parquet(path)
    except Exception as err:  # pyarrow's errors for a truncated or foreign file vary
        return None, [f"Left out: {path} cannot be read ({type(err).__name__}: {err})."]
    missing = [c for c in INTERPOLATION_COLUMNS if c not in frame.columns]
    if missing:
        return None, [f"Left out: {path} lacks the column(s) {', '.join(missing)}."]
    return frame.sort_values(["pair", "alpha"]), []


def epoch_probes(df: pd.DataFrame) -> pd.DataFrame:
    """The epochs that carry probe values, with each run's smoothed noise scale; empty when none does."""
    present = [c for c in EPOCH_PROBES if c in df.columns]
    epochs = df[df["epoch"].notna()]
    if not present or epochs[present].isna().all().all():
        return epochs.iloc[0:0]
    epochs = epochs[epochs[present].notna().any(axis=1)].sort_values(["run_id", "epoch"]).copy()
    if {"grad_trace_cov", "grad_norm_sq"} <= set(present):
        epochs["noise_scale_smoothed"] = pd.concat(
            [smoothed_noise_scale(run) for _, run in epochs.groupby("run_id", sort=False)])
    return epochs


SCALING_NOTE = ("B_simple only estimates the critical batch size; to measure it (steps to a target at every batch "
                "size, McCandlish's curve fitted, and B_simple's prediction checked): python -m harness "
                "+study=scaling -m.")


def explain(sweep: Sweep, df: pd.DataFrame) -> Why:
    """The probes of `sweep` (`df`: its epochs with a `facet` column, or some of them) and what they show."""
    probes, notes = read_probes(sweep, df)
    interpolation, more = read_interpolation(sweep.folder)
    if interpolation is not None:  # each pair in the facet of its small-batch run, so a figure can show every facet
        facet_of = df.drop_duplicates("run_id").set_index("run_id")["facet"]
        interpolation["facet"] = interpolation["small_run"].map(facet_of).fillna("all runs")
    epochs = epoch_probes(df)
    notes += more
    if probes.empty and epochs.empty and interpolation is None:
        off = "probes" in df.columns and not df["probes"].fillna(False).astype(bool).any()
        notes.append(NO_PROBES.format(why="probes=false" if off else "made without them, or every probe failed"))
    readings = []
    for facet in facet_order(df["facet"]):
        lines = [sharpness_sentence(probes[probes["facet"] == facet]) if not probes.empty else None,
                 noise_scale_sentence(epochs[epochs["facet"] == facet]) if not epochs.empty else None,
                 distance_sentence(epochs[epochs["facet"] == facet]) if not epochs.empty else None]
        if any(lines):
            readings.append(Reading(facet, [line for line in lines if line]))
    if not epochs.empty and "noise_scale_smoothed" in epochs:
        notes.append(SCALING_NOTE)
    return Why(probes, epochs, interpolation, readings, notes)


def number(value: float) -> str:
    """A measurement as a reader wants it: 85, 27.4, 0.314, 2,300."""
    if not math.isfinite(value):
        return "–"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def sharpness_sentence(probes: pd.DataFrame) -> str | None:
    """Is the largest batch's minimum sharper than the smallest's? Judged on the top Hessian eigenvalue, with
    Keskar's sharpness beside it; None when fewer than two batch sizes have an eigenvalue."""
    measured = probes[probes["hessian_top_eigenvalue"].notna()]
    sizes = sorted(measured[BATCH].unique())
    if len(sizes) < 2:
        return None
    small, large = (measured[measured[BATCH] == b] for b in (sizes[0], sizes[-1]))
    eig_s, eig_l = small["hessian_top_eigenvalue"].mean(), large["hessian_top_eigenvalue"].mean()
    numbers = f"top Hessian eigenvalue {number(eig_l)} vs {number(eig_s)}"
    if small["sharpness"].notna().any() and large["sharpness"].notna().any():
        numbers += f"; sharpness {number(large['sharpness'].mean())} vs {number(small['sharpness'].mean())}"
    if min(small["hessian_top_eigenvalue"].min(), large["hessian_top_eigenvalue"].min()) <= 0:  # a saddle or a
        # maximum: a ratio means nothing
        return f"The top Hessian eigenvalues are not both positive ({numbers}), so they are not compared as a ratio."
    n_small, n_large = len(small), len(large)
    ratio = eig_l / eig_s
    if min(n_small, n_large) >= 2:
        ratio, low, high = eigenvalue_ratio(large["hessian_top_eigenvalue"].to_numpy(),
                                            small["hessian_top_eigenvalue"].to_numpy())
        differs = not low <= 1.0 <= high
        evidence = (f"{100 * (1 - ALPHA):.0f}% interval of the ratio [{low:.2g}, {high:.2g}], on the log scale over "
                    f"seeds, n = {n_large} and {n_small}")
    else:
        differs = not 1 / SINGLE_SEED_RATIO < ratio < SINGLE_SEED_RATIO
        where = "per batch size" if n_small == n_large else f"at batch {sizes[-1] if n_large == 1 else sizes[0]}"
        evidence = (f"n = 1 seed {where}: no test is possible, so a ratio beyond {SINGLE_SEED_RATIO}x counts as a "
                    "difference; indicative only")
    if not differs:
        return (f"The data do not show a sharpness difference between the batch-{sizes[-1]} and the batch-{sizes[0]} "
                f"minimum ({numbers}; ratio {ratio:.2g}x; {evidence}).")
    kind, times = ("sharper", ratio) if ratio > 1 else ("flatter", 1 / ratio)
    how = "a ratio of the seeds' geometric means; mean " if min(n_small, n_large) >= 2 else ""
    return (f"The batch-{sizes[-1]} minimum is {times:.2g}x {kind} than batch-{sizes[0]}'s ({how}{numbers}; "
            f"{evidence}).")


def eigenvalue_ratio(large, small) -> tuple[float, float, float]:
    """(the ratio of the geometric means of two groups of positive values, its 1 - ALPHA interval): Welch's interval
    of the difference of their mean logs, back on the ratio scale."""
    logs_large, logs_small = np.log(np.asarray(large, dtype=float)), np.log(np.asarray(small, dtype=float))
    low, high = welch_interval(logs_large, logs_small, 1 - ALPHA)
    return float(np.exp(logs_large.mean() - logs_small.mean())), float(np.exp(low)), float(np.exp(high))


def noise_scale_sentence(epochs: pd.DataFrame) -> str | None:
    """The last epoch's smoothed noise scale (mean over runs) against the swept batch sizes. A run whose smoothed
    |G|² is not positive there has no noise scale to read: said, with the count, never averaged in."""
    if "noise_scale_smoothed" not in epochs:
        return None
    final = epochs.sort_values("epoch").groupby("run_id").tail(1)
    final = final[final["grad_norm_sq"].notna()] if "grad_norm_sq" in final else final
    if final.empty:
        return None
    last = final["noise_scale_smoothed"].dropna()
    unreadable = len(final) - len(last)
    caveat = (f" For {unreadable} of {len(final)} runs the smoothed |G|² came out zero or negative at the last epoch "
              "(the mean gradient smaller than the small batches' noise can resolve): their noise scale is "
              "inconclusive and not in the mean." if unreadable else "")
    if last.empty:
        return "Gradient noise scale at the last epoch: inconclusive." + caveat
    noise = last.mean()
    sizes = sorted(epochs[BATCH].unique())
    above = [s for s in sizes if s > noise]
    where = (f"batch {', '.join(map(str, above))} lie{'s' if len(above) == 1 else ''} above it" if above
             else f"every swept batch size ({', '.join(map(str, sizes))}) lies below it")
    return (f"Gradient noise scale at the last epoch: B_simple ≈ {number(noise)} (tr(Σ) and |G|² smoothed across "
            f"epochs, mean over {len(last)} runs); {where}. Batches above ~B_noise gain little per step: "
            "McCandlish et al.'s critical batch size, which B_simple roughly estimates." + caveat)


def distance_sentence(epochs: pd.DataFrame) -> str | None:
    """How far each batch size's weights travelled from their initial values by the final epoch."""
    if "weight_distance" not in epochs or epochs["weight_distance"].isna().all():
        return None
    last = epochs[epochs["weight_distance"].notna()].sort_values("epoch").groupby("run_id").tail(1)
    by_size = last.groupby(BATCH).agg(distance=("weight_distance", "mean"), step=("step", "mean"),
                                      epoch=("epoch", "max"))
    parts = [f"batch {size}: {number(row.distance)} after {number(row.step)} steps" for size, row in by_size.iterrows()]
    line = ("Distance from the initial weights by the final epoch, ‖w_T − w_0‖ (mean over seeds): "
            f"{'; '.join(parts)}.")
    if len(by_size) >= 2 and by_size["distance"].iloc[0] > 0:
        share = by_size["distance"].iloc[-1] / by_size["distance"].iloc[0]
        line += (f" The largest batch travelled {share:.2g}x as far as the smallest"
                 + (f" in the same {int(by_size['epoch'].iloc[0])} epochs." if by_size["epoch"].nunique() == 1
                    else "."))
    return line
