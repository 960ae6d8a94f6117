"""The report's figures: which the main part shows, in order, with the caption under each, and every figure
of every section (main, Why, the tuned study) rendered to an embedded PNG. Files only: no TensorFlow."""
from __future__ import annotations

import base64
import io

import pandas as pd

from harness.report.plots import sweep as plots
from harness.report.plots import tuning as tuning_plots
from harness.report.plots import why as why_plots
from harness.report.plots.findings import findings_figure


def _always(df: pd.DataFrame) -> bool:
    return True


def _has_batch_norm(df: pd.DataFrame) -> bool:
    return "val_acc_precise_bn" in df.columns and df["val_acc_precise_bn"].notna().any()


def _replicas_vary(df: pd.DataFrame) -> bool:
    return "replicas" in df.columns and df["replicas"].nunique() > 1


# (title, plot, data: "epochs" (every row), "final" (one row per completed run) or "findings", shown when)
FIGURES = [
    ("Suspects: each treated group beside its reference", findings_figure, "findings", _always),
    ("Learning curves", plots.learning_curves, "epochs", _always),
    ("Validation accuracy and gap vs batch size", plots.accuracy_vs_batch, "final", _always),
    ("Validation accuracy vs optimizer steps", plots.val_vs_steps, "epochs", _always),
    ("Batch-norm statistics: val_acc with moving vs recomputed statistics", plots.batchnorm_val_vs_steps, "epochs",
     _has_batch_norm),
    ("Throughput", plots.throughput_vs_batch, "epochs", _always),
    ("Throughput vs replicas", plots.throughput_vs_replicas, "epochs", _replicas_vary),
]
CAPTIONS = {  # under each figure, for the reader
    "Suspects: each treated group beside its reference": (
        "For every finding under Other suspects: train accuracy and val_acc of the reference runs (left of each "
        "panel) and of the treated runs (right), mean ± sd over runs; the gap train_eval_acc - val_acc above each "
        "side."),
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


def figures(a) -> list[tuple[str, object]]:
    """(title, Figure) for every figure the report shows for an assessment, in order."""
    drawn = []
    for title, plot, source, shown in FIGURES:
        data = {"final": a.final, "findings": a.final}.get(source, a.df[a.df["epoch"].notna()])
        if data.empty or not shown(data):
            continue
        fig = plot(a.findings) if source == "findings" else plot(data)
        if fig is not None:
            drawn.append((title, fig))
    return drawn


def png(fig) -> str:
    """The figure as a base64 PNG, for an <img src="data:...">."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def sections(a) -> tuple[list[dict], list[dict], list[dict]]:
    """The embedded figures ({title, png, caption}) of the main part, the Why section and the tuned study's
    section, for an assessment."""
    main = [(title, fig, CAPTIONS[title]) for title, fig in figures(a)]
    return tuple([{"title": title, "png": png(fig), "caption": caption} for title, fig, caption in drawn]
                 for drawn in (main, why_plots.figures(a.why), tuning_plots.figures(a.tunings)))
