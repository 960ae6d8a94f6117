"""pause_epoch: a run stops after that epoch and keeps its checkpoint, for a later job of its sweep to continue
(harness.store.fork); with pause_when=cheaper only where that is worth it. Continuing costs the later job its set-up
and its first call's compile again, and saves the epochs left whenever the run is not continued (a study's rung
cuts part of its trials): the run pauses where that fixed cost, as this run measured it, is less than the time its
epochs left would take. A pause changes no number the run records, only what it costs: a paused run continued
has the epochs of one run trained straight through.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Estimate:
    """What a pause would save and cost, from this run's own clock (seconds)."""

    set_up: float      # from the run's start to its fit's: data, model, devices
    compile: float     # the first epoch's time beyond a later one's
    per_epoch: float   # an epoch's wall time with the harness's passes, the compile left out
    epochs_left: int

    @property
    def pays(self) -> bool:
        return self.set_up + self.compile < self.epochs_left * self.per_epoch

    def as_json(self) -> dict:
        return {**{k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()},
                "pays": self.pays}


def estimate(set_up: float, epoch_seconds: list[float], fit_wall: float, epochs_left: int) -> Estimate:
    """The estimate at the pause: `epoch_seconds` the training time of each epoch so far (the first with its
    compile), `fit_wall` the fit's wall time so far. With one epoch there is no later one to tell the compile from:
    the whole first epoch's training counts as compile, and an epoch left as its passes alone, which errs towards
    training on (a pause that does not pay costs a continuation; one not taken, at most the epochs left of the
    trials a rung cuts)."""
    later = epoch_seconds[1:]
    compile_ = max(0.0, epoch_seconds[0] - statistics.median(later)) if later else epoch_seconds[0]
    return Estimate(set_up, compile_, (fit_wall - compile_) / len(epoch_seconds), epochs_left)


def stopped(train, model, rows: list[dict]) -> bool:
    """Stopped at its pause_epoch (`train`: the run's TrainConfig), by the pause: not by a target, a divergence or
    a signal."""
    return train.pause_epoch is not None and not model.stop_training and bool(rows) and \
        rows[-1]["epoch"] == train.pause_epoch


def pays(train, rows: list[dict], set_up: float, fit_wall: float, record) -> bool:
    """Whether to pause: always with pause_when=always; with cheaper where continuing later costs less than
    finishing now (`rows`: this attempt's epochs), the estimate recorded in run.json (`pause`) either way."""
    if train.pause_when == "always":
        return True
    found = estimate(set_up, [row["epoch_seconds"] for row in rows], fit_wall, train.epochs - train.pause_epoch)
    record.update(pause=found.as_json())
    return found.pays
