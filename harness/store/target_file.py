"""target.json, where a run with target_tune_acc reached its target and what it measured there: its fields named
once, for the writer (harness.run.target) and the readers (harness.studies.scaling.reading,
harness.report.results)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.store.files import read_json, write_fields
from harness.store.layout import TARGET_FILE

FIELDS = {
    "target_tune_acc": "the target",
    "steps_to_target": "the first checked step at which tune_acc reached it (null: never, within the budget)",
    "samples_to_target": "training samples in those steps (an epoch's last, partial batch counts what it holds)",
    "target_resolution": "steps since the check before, over steps_to_target: how finely the crossing is located",
    "target_checks": "checks of the tuning slice's accuracy made",
    "seconds_to_target": "wall seconds from the fit's start (its first compiled call included) to the end of the "
                         "check that saw the target, of this attempt (a resumed run counts from its resume; null: "
                         "never)",
    "between_epochs_seconds": "of seconds_to_target, those the harness spent between epochs (its per-epoch "
                              "measurements, the row, the checkpoint, the trackers), which a run of one's own would "
                              "not spend",
    "check_seconds": "seconds of those checks (or of every check, when the target was not reached)",
    "check_times": "[step, seconds since the fit's start, between_epochs_seconds so far] after each check (older "
                   "files: [step, seconds])",
    "check_tune_acc": "the tuning slice's accuracy at each check, in check_times' order: the curve a study reads the "
                      "time from one accuracy to the next from",
    "target_check": "where the target was checked: steps (within epochs) or epoch (at each epoch's end)",
    "steps_per_epoch": "the run's steps per epoch",
    "target_max_samples": "where a run that had not reached the target was to stop (null: at its epochs)",
    "stopped_short": "true: it stopped there without the target (a study's race or cap), not at the end of its epochs",
    "fit_start_seconds": "what starting a fit cost, once for each phase this attempt trained: the seconds from the "
                         "phase's start to the end of its first compiled call less those of its second (its "
                         "pipeline, and its train function's trace and compile: what a ramp's switch to the batch "
                         "pays; older files: none)",
    "tune_acc_at_target": "the tuning slice's accuracy then", "val_acc_at_target": "the validation accuracy then",
    "val_loss_at_target": "the validation loss then",
    "noise_batch": "samples per small batch of the noise scale there",
    "noise_gram": "the Gram matrix g_i·g_j of that many batches' mean-loss gradients (the noise scale and its "
                  "bootstrap, harness.probes.noise_scale.from_gram)",
    "noise_scale_at_target": "B_simple = tr(Σ)/|G|² from them (null when |G|² is not positive)",
}
RUN_FIELDS = ("steps_to_target", "samples_to_target", "seconds_to_target")  # also in run.json
# the scalars a run's row in harness.results adds (the target itself is a config column already)
COLUMNS = tuple(k for k in FIELDS if k not in ("noise_gram", "check_times", "check_tune_acc", "target_tune_acc",
                                               "target_check", "steps_per_epoch", "between_epochs_seconds",
                                               "target_max_samples", "stopped_short",
                                               "fit_start_seconds"))


def write(run_dir: Path, values: dict[str, Any]) -> None:
    write_fields(Path(run_dir) / TARGET_FILE, values, FIELDS)


def read(run_dir: Path) -> dict[str, Any] | None:
    """The run's target.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(run_dir) / TARGET_FILE)
