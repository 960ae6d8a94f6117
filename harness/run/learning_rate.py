"""The run's learning rate as Keras's optimizer reads it: a float, a fixed batch's RecipeSchedule (warm-up, then a
shape over its planned steps), or a ramp's RampSchedule (harness.config.ramp: each phase's peak, the decay over
samples). Each is the same rule as its Python twin in harness.config, in keras.ops, a function of the optimizer's
step count (which the checkpoint holds, so a resumed run continues on it)."""
from __future__ import annotations

import math

from harness.backend import keras
from harness.config.batching import Schedule
from harness.config.ramp import RunPlan


class RecipeSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak` over `warmup_steps` updates (Goyal et al. 2017: (step + 1) / W, the same for
    every shape), then `shape`: constant; cosine or linear decay to 0 at the last of `planned_steps`; step, a
    tenfold fall at half and at three quarters of them. harness.config.batching.Schedule.lr_at is the same rule in
    Python, for one step."""

    def __init__(self, peak: float, warmup_steps: int, shape: str = "constant", planned_steps: int = 0):
        self.peak, self.warmup_steps = float(peak), int(warmup_steps)
        self.shape, self.planned_steps = shape, int(planned_steps)

    def __call__(self, step):
        ops = keras.ops
        step = ops.cast(step, "float32")
        warm = self.warmup_steps
        rate = ops.convert_to_tensor(self.peak, "float32")
        if self.shape in ("cosine", "linear"):
            progress = ops.clip((step - warm) / float(max(1, self.planned_steps - 1 - warm)), 0.0, 1.0)
            factor = 0.5 * (1.0 + ops.cos(math.pi * progress)) if self.shape == "cosine" else 1.0 - progress
            rate = rate * factor
        elif self.shape == "step":
            half, three_quarters = self.planned_steps // 2, (3 * self.planned_steps) // 4
            falls = ops.cast(step >= half, "float32") + ops.cast(step >= three_quarters, "float32")
            rate = rate * ops.power(0.1, falls)
        if warm > 0:
            rate = ops.where(step < warm, self.peak * ops.minimum(1.0, (step + 1.0) / float(warm)), rate)
        return rate

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "shape": self.shape,
                "planned_steps": self.planned_steps}


class RampSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """A ramp's rate (harness.config.ramp.RunPlan.lr_at): the warm-up of the first phase, then the peak of the
    phase the step is in, times the decay at the samples seen before the step. `phases`: (start step, start
    samples, global batch, steps per epoch, peak) of each; `points`: RunPlan.decay_points."""

    def __init__(self, peak: float, warmup_steps: int, shape: str, train_size: int, phases, points):
        self.peak, self.warmup_steps, self.shape, self.train_size = float(peak), int(warmup_steps), shape, train_size
        self.phases = [[float(v) for v in phase] for phase in phases]
        self.points = [int(v) for v in points]

    def __call__(self, step):
        ops = keras.ops
        step = ops.cast(step, "float32")
        columns = [ops.convert_to_tensor([phase[i] for phase in self.phases], "float32") for i in range(5)]
        start_step, start_samples, batch, per_epoch, peak = columns
        index = ops.cast(ops.sum(ops.cast(step >= start_step[1:], "int32")), "int32")
        within = step - ops.take(start_step, index)
        epochs = ops.floor(within / ops.take(per_epoch, index))
        left = within - epochs * ops.take(per_epoch, index)
        samples = (ops.take(start_samples, index) + epochs * self.train_size
                   + ops.minimum(left * ops.take(batch, index), float(self.train_size)))
        warm, last, total = (float(v) for v in self.points)
        rate = ops.take(peak, index)
        if self.shape in ("cosine", "linear"):
            progress = ops.clip((samples - warm) / max(1.0, last - warm), 0.0, 1.0)
            rate = rate * (0.5 * (1.0 + ops.cos(math.pi * progress)) if self.shape == "cosine" else 1.0 - progress)
        elif self.shape == "step":
            falls = (ops.cast(samples >= float(int(total) // 2), "float32")
                     + ops.cast(samples >= float((3 * int(total)) // 4), "float32"))
            rate = rate * ops.power(0.1, falls)
        if self.warmup_steps > 0:
            rate = ops.where(step < self.warmup_steps,
                             self.peak * ops.minimum(1.0, (step + 1.0) / float(self.warmup_steps)), rate)
        return rate

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "shape": self.shape,
                "train_size": self.train_size, "phases": self.phases, "points": self.points}


def learning_rate(schedule: Schedule, planned: RunPlan | None = None):
    """A float (constant, no warm-up, one peak: as every run before the schedules), the run's RecipeSchedule, or
    with a ramp (`planned`) its RampSchedule."""
    peaks = {schedule.peak_lr} if planned is None else {phase.peak_lr for phase in planned.phases}
    if schedule.shape == "constant" and schedule.warmup_steps == 0 and len(peaks) == 1:
        return schedule.peak_lr
    if planned is None or not planned.ramp:
        return RecipeSchedule(schedule.peak_lr, schedule.warmup_steps, schedule.shape, schedule.planned_steps)
    phases = [(p.start_step, p.start_samples, p.plan.global_batch_size, p.plan.steps_per_epoch, p.peak_lr)
              for p in planned.phases]
    return RampSchedule(schedule.peak_lr, schedule.warmup_steps, schedule.shape, planned.first.train_size, phases,
                        planned.decay_points())
