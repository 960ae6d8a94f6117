"""checkpoint.npz: a run's weights, optimizer state and epoch after every epoch, so a killed run resumes.

One plain .npz (no pickles), replaced atomically: a kill at any moment leaves the last complete epoch. Saving
the arrays directly costs about a millisecond for the built-in models, a fraction of a .keras archive. The
model is used only through its Keras methods, so this module loads no TensorFlow until a callback is made.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import numpy as np

from harness.store.files import atomic_write
from harness.store.layout import CHECKPOINT, METRICS_FILE

log = logging.getLogger(__name__)


def saved_epoch(run_dir: Path) -> int:
    """Epochs completed by the run's last checkpoint (0 when there is none)."""
    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        return 0
    with np.load(path, allow_pickle=False) as saved:
        return int(saved["epoch"])


def save(run_dir: Path, epoch: int, model) -> None:
    """Weights and optimizer variables of `model` after `epoch` completed epochs."""
    arrays = {f"weight_{i}": w for i, w in enumerate(model.get_weights())}
    arrays.update({f"optimizer_{i}": v.numpy() for i, v in enumerate(model.optimizer.variables)})

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:  # a file object: given a name, numpy would append ".npz" to it
            np.savez(f, epoch=np.int64(epoch), **arrays)

    atomic_write(Path(run_dir) / CHECKPOINT, write)


def restore(model, run_dir: Path) -> None:
    """Load weights and optimizer state into a built, compiled model; call inside the strategy's scope."""
    with np.load(Path(run_dir) / CHECKPOINT, allow_pickle=False) as saved:
        model.set_weights([saved[f"weight_{i}"] for i in range(len(model.weights))])
        model.optimizer.build(model.trainable_variables)
        for i, variable in enumerate(model.optimizer.variables):
            variable.assign(saved[f"optimizer_{i}"])


def remove(run_dir: Path) -> None:
    (Path(run_dir) / CHECKPOINT).unlink(missing_ok=True)


def callback(run_dir: Path, model, then: Callable[[], None] | None = None):
    """A Keras callback that saves `model` after each epoch (after the metrics row: callbacks run in order), then
    calls `then` (what may happen only once the epoch is saved: harness.tracking.live logs it).

    A run that stops now (diverged, or at its target loss) has nothing to resume, so nothing is saved then.
    """
    from harness.backend import keras

    def on_epoch_end(epoch: int, logs=None) -> None:
        if not model.stop_training:
            save(run_dir, epoch + 1, model)
            if then is not None:
                then()

    return keras.callbacks.LambdaCallback(on_epoch_end=on_epoch_end)


def resume_point(run_dir: Path, previous: dict | None, damage: str | None,
                 timed: bool = False) -> tuple[int, list[str]]:
    """The epoch to continue after, and notes on damaged files of the earlier attempt: a checkpoint, run.json or
    metrics.parquet that cannot be read sends the run back to epoch 0 (its stale rows dropped), with a warning. A
    `timed` run (a study's time measured alone: its seconds to the target from the fit's start) starts again from
    epoch 0 too: resumed, its time would count from the resume only."""
    if previous is None and damage is None:
        return 0, []
    if timed and damage is None:
        damage = "a run timed alone that was interrupted (its time counts from the fit's start)"
    try:
        if damage is None:
            return saved_epoch(run_dir), []
    except Exception as err:  # a truncated or foreign checkpoint.npz
        damage = f"{run_dir / CHECKPOINT} cannot be read ({type(err).__name__}: {err})"
    note = f"{damage}: the run started again from epoch 0"
    log.warning(note)
    remove(run_dir)
    (run_dir / METRICS_FILE).unlink(missing_ok=True)
    return 0, [note]
