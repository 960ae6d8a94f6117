"""A run's training, one Keras `fit` per phase of its batch plan (harness.config.ramp): a fixed batch is one phase,
a `batch_schedule` several. Keras builds a fit's data adapter once (keras#10143: a callback that changes the batch
has no effect), so each phase gets its own batches and its own fit, on the same model and optimizer: the weights,
the optimizer's moments and its step count (which the learning rate follows) carry across, and the compiled train
function is rebuilt once per phase, for its batch and its steps per compiled call. Before each phase the epoch
rows' batch columns, the target check's plan and the batch-norm momentum (the EMA rule) become the phase's: on a
resume too, since a checkpoint holds weights, not layer settings."""
from __future__ import annotations

import logging
import math
from typing import Callable

from harness.config import ramp
from harness.config.ramp import RunPlan
from harness.run import train

log = logging.getLogger(__name__)


class PhaseSettings:
    """What changes with the phase besides the batches: the rows' columns (`on_phase(phase)`: the recorder's and the
    target monitor's), each batch-norm layer's momentum, the model's steps per compiled call."""

    def __init__(self, model, planned: RunPlan, on_phase: Callable[[ramp.Phase], None]):
        from harness.models.layers import batch_norm_layers

        self.model, self.planned, self.on_phase = model, planned, on_phase
        self.layers = batch_norm_layers(model) if planned.ramp else []
        self.momenta = [float(layer.momentum) for layer in self.layers]  # the first phase's, as built
        # where the EMA rule's momentum is clipped at its floor (run.json's notes say it)
        self.notes = list(dict.fromkeys(note for rho in self.momenta for note in ramp.clipped(rho, planned)))

    def initial_weight(self, steps: int) -> float:
        """bn_initial_weight over a ramp (harness.run.precise_bn.initial_weight): the largest over the layers of the
        product of each phase's momentum to the power of the updates made in it, out of the first `steps`."""
        first = self.planned.phases[0]
        return max(math.prod(ramp.bn_momentum(rho, phase, first) ** min(max(steps - phase.start_step, 0), phase.steps)
                             for phase in self.planned.phases) for rho in self.momenta)

    def track(self, precise):
        """A PreciseBatchNorm (or None) whose bn_initial_weight follows a ramp's momenta."""
        if precise is not None and self.planned.ramp:
            precise.initial_weight = self.initial_weight
        return precise

    def enter(self, index: int) -> None:
        phase = self.planned.phases[index]
        self.on_phase(phase)
        for layer, rho in zip(self.layers, self.momenta):
            layer.momentum = ramp.bn_momentum(rho, phase, self.planned.phases[0])
        if self.planned.ramp:  # fit rebuilds it for the phase's batch and call size: one compile per phase
            self.model.steps_per_execution = phase.plan.steps_per_execution
            self.model.train_function = None


def fit_phases(model, planned: RunPlan, phase_batches: Callable, settings: PhaseSettings,
               callbacks: list, resume_epoch: int, pause_epoch: int | None = None) -> None:
    """Train every phase from the one holding `resume_epoch` on, up to `pause_epoch` where one is given (the
    schedule still planned over every epoch); stop after a phase whose fit was stopped (a target reached, a loss
    that diverged)."""
    total_steps = planned.schedule.total_steps  # budget=steps: one phase only (a schedule is refused with it)
    last = planned.schedule.epochs if pause_epoch is None else min(pause_epoch, planned.schedule.epochs)
    for index in range(planned.phase_of_epoch(min(resume_epoch, planned.schedule.epochs - 1)), len(planned.phases)):
        phase = planned.phases[index]
        start, end = max(phase.start_epoch, resume_epoch), min(phase.end_epoch, last)
        if start >= end:
            return
        settings.enter(index)
        if planned.ramp:
            log.info("phase %d: epochs %d-%d at %s", index + 1, start + 1, end, phase.plan.describe())
        train.fit(model, phase_batches(phase.plan, end, start, total_steps), phase.plan, end, callbacks,
                  initial_epoch=start)
        if model.stop_training:
            return
