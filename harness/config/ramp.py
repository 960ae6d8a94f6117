"""A run's batch plan over its epochs: one phase at `batch_size`, or the phases of `batch_schedule`, a batch that
grows at whole epochs (Smith et al. 2018, "Don't decay the learning rate, increase the batch size"; AdaBatch;
Merrill et al. 2025's batch-size warm-up).

Each phase has its own batch plan (global and per-replica batch, steps per epoch, steps per compiled call: a phase
is trained by a `fit` of its own, harness.run.phases). The learning rate follows every change by the run's
`lr_scaling` (none: Smith's rule keeps it; sqrt: Adam's; linear), from the first phase's batch; the warm-up
happens once, within the first phase; a decaying `lr_schedule` is planned over the run's training samples, not its
steps (a step at batch 512 is 16 of batch 32's), with the last update at the end of the decay as a fixed batch's.
The batch-norm momentum follows the EMA rule at every change (rho^(B / B_first): the average's horizon stays the
same number of samples). Pure: configs in, plans out; every error is one line naming `batch_schedule`.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any

from harness.config.batching import LR_FACTORS, BatchPlan, Schedule, ema_momentum, plan_batches, plan_schedule
from harness.fields import ConfigError

KEY = "batch_schedule"
EXAMPLE = "[[0,32],[2,128]]"


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _phase(value: Any) -> bool:
    """[start_epoch, batch] of whole numbers, or [start_epoch, batch, lr_factor] with a factor > 0."""
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3) or not all(map(_whole, value[:2])):
        return False
    return len(value) == 2 or (isinstance(value[2], (int, float)) and not isinstance(value[2], bool)
                               and math.isfinite(value[2]) and value[2] > 0)


def parse(value: Any, epochs: int, budget: str) -> tuple[tuple, ...] | None:
    """`batch_schedule` as ((start_epoch, batch[, lr_factor]), ...), checked against the run's epochs; None when
    null. A phase's lr_factor gives it the peak a fixed run at its batch with that lr_factor has (each batch size's
    own best learning rate, +study=choose's proposal); without one the peak follows lr_scaling from the first
    phase's."""
    if value is None:
        return None
    pairs = value if isinstance(value, (list, tuple)) else None
    if pairs is None or not all(map(_phase, pairs)):
        raise ConfigError(KEY, value, f"null or a list of [start_epoch, batch] pairs of whole numbers (or [start_epoch, "
                          f"batch, lr_factor] with a factor > 0), e.g. {EXAMPLE}")
    phases = tuple((int(p[0]), int(p[1]), *([float(p[2])] if len(p) == 3 else [])) for p in pairs)
    if len(phases) < 2:
        raise ConfigError(KEY, value, "two or more phases (one batch for the whole run is batch_size="
                          f"{phases[0][1] if phases else 32})")
    if phases[0][0] != 0:
        raise ConfigError(KEY, value, f"phases whose first starts at epoch 0, e.g. {EXAMPLE}")
    starts = [phase[0] for phase in phases]
    if any(later <= earlier for earlier, later in zip(starts, starts[1:])):
        raise ConfigError(KEY, value, f"phases whose start epochs increase, e.g. {EXAMPLE}")
    if starts[-1] >= epochs:
        raise ConfigError(KEY, value, f"phases that start before the run's last epoch (epochs={epochs}: a start "
                          f"from 0 to {epochs - 1})")
    if any(phase[1] < 1 for phase in phases):
        raise ConfigError(KEY, value, "batches of 1 or more samples")
    for number, (before, phase) in enumerate(itertools.pairwise(phases), start=2):
        if phase[1] < before[1]:
            raise ConfigError(KEY, value, f"batches that grow or stay: phase {number}'s batch {phase[1]} is below "
                              f"the {before[1]} before it (a batch schedule grows the batch, e.g. {EXAMPLE})")
        if phase[1] == before[1] and (len(phase) < 3 or (len(before) == 3 and phase[2] >= before[2])):
            raise ConfigError(KEY, value, f"a phase at the batch before it only with an lr_factor of its own below "
                              f"that phase's (a fall of the rate, e.g. [[0,32],[2,128],[4,128,0.1]]): phase "
                              f"{number} repeats batch {phase[1]}")
    if budget == "steps":
        raise ConfigError(KEY, value, "null with budget=steps (a step budget fixes one batch's updates; a schedule "
                          "runs its epochs)")
    return phases


def label(phases) -> str:
    """A schedule as readings name it: its batches in order, a batch kept for a fall of the rate named once, e.g.
    32→128→512."""
    batches = [phase[1] for phase in phases]
    return "→".join(f"{b:g}" for n, b in enumerate(batches) if n == 0 or b != batches[n - 1])


def changes(phases, grows: str = "after") -> str:
    """Where a schedule changes, in words: the epochs after which its batch grows ("after epochs 2, 4", `grows`
    the words before them), and those after which its rate falls at the same batch ("; the rate falling after epoch
    6")."""
    def epochs(starts: list[str]) -> str:
        return f"epoch{'s' if len(starts) > 1 else ''} {', '.join(starts)}"

    pairs = list(itertools.pairwise(phases))
    grown = [f"{later[0]:g}" for before, later in pairs if later[1] != before[1]]
    fallen = [f"{later[0]:g}" for before, later in pairs if later[1] == before[1]]
    return f"{grows} {epochs(grown)}" + (f"; the rate falling after {epochs(fallen)}" if fallen else "")


def column_label(text: str) -> str:
    """A metrics column's schedule ('0:32,2:128', harness.store.run_files.config_columns) as readings name it,
    with the epochs after which it grows: 32→128 (after epoch 2)."""
    phases = [tuple(float(v) for v in pair.split(":")) for pair in str(text).split(",")]
    return f"{label(phases)} ({changes(phases)})"


@dataclass(frozen=True)
class Phase:
    start_epoch: int
    end_epoch: int       # exclusive: the next phase's start, or the run's epochs
    plan: BatchPlan
    peak_lr: float       # the first phase's peak x lr_scaling's factor of (this batch / the first)
    start_step: int      # updates before the phase
    start_samples: int   # training samples before the phase

    @property
    def steps(self) -> int:
        return (self.end_epoch - self.start_epoch) * self.plan.steps_per_epoch


@dataclass(frozen=True)
class RunPlan:
    """The run's phases (one for a fixed batch) and its schedule: the first phase's peak, warm-up and shape, with
    `planned_steps` over every phase."""
    phases: tuple[Phase, ...]
    schedule: Schedule

    @property
    def first(self) -> BatchPlan:
        return self.phases[0].plan

    @property
    def ramp(self) -> bool:
        return len(self.phases) > 1

    @property
    def total_samples(self) -> int:
        return self.schedule.epochs * self.first.train_size

    def phase_of_epoch(self, epoch: int) -> int:
        """The phase that trains epoch `epoch` (0-based)."""
        return max(i for i, phase in enumerate(self.phases) if phase.start_epoch <= epoch)

    def phase_of_step(self, step: int) -> int:
        """The phase that makes update `step` (0-based)."""
        return max(i for i, phase in enumerate(self.phases) if phase.start_step <= step)

    def samples_seen(self, steps: int) -> int:
        """Training samples in the first `steps` updates, across phases (every epoch's last batch holds what is
        left of it)."""
        phase = self.phases[self.phase_of_step(steps)] if steps else self.phases[0]
        epochs, within = divmod(steps - phase.start_step, phase.plan.steps_per_epoch)
        size = phase.plan.train_size
        return phase.start_samples + epochs * size + min(within * phase.plan.global_batch_size, size)

    def lr_at(self, step: int) -> float:
        """The learning rate of update `step` (0-based): a fixed batch's Schedule.lr_at; a ramp's by its phase's
        peak and the decay over samples (harness.run.learning_rate.RampSchedule is the same rule in keras.ops)."""
        if not self.ramp:
            return self.schedule.lr_at(step)
        schedule, phase = self.schedule, self.phases[self.phase_of_step(step)]
        if schedule.warmup_steps > 0 and step < schedule.warmup_steps:
            return schedule.peak_lr * min(1.0, (step + 1) / schedule.warmup_steps)
        return phase.peak_lr * decay_factor(schedule.shape, self.samples_seen(step), self.decay_points())

    def decay_points(self) -> tuple[int, int, int]:
        """(samples at the warm-up's end, samples before the run's last update, the run's samples): a ramp's decay
        runs from the first to the second; `step` falls tenfold at half and three quarters of the third."""
        last = self.phases[-1].plan
        last_batch = last.train_size - (last.steps_per_epoch - 1) * last.global_batch_size
        return self.samples_seen(self.schedule.warmup_steps), self.total_samples - last_batch, self.total_samples


def decay_factor(shape: str, samples: float, points: tuple[int, int, int]) -> float:
    """A ramp's decay after its warm-up at `samples` seen (decay_points)."""
    warm, last, total = points
    if shape in ("cosine", "linear"):
        progress = min(1.0, max(0.0, (samples - warm) / max(1, last - warm)))
        return 0.5 * (1 + math.cos(math.pi * progress)) if shape == "cosine" else 1.0 - progress
    if shape == "step":
        return 0.1 ** ((samples >= total // 2) + (samples >= (3 * total) // 4))
    return 1.0


def plan_run(train, replicas: int, train_size: int, backend: str = "tensorflow",
             host_devices: bool = False) -> RunPlan:
    """The run's phases and schedule (`train` a TrainConfig); raises ConfigError, naming batch_schedule for what
    only a phase of it breaks."""
    def plan(batch: int) -> BatchPlan:
        return plan_batches(batch, train.per_replica_batch, replicas, train_size, train.steps_per_execution,
                            check_target=train.checks_within_epochs, backend=backend, host_devices=host_devices)

    if train.batch_schedule is None:
        first = plan(train.batch_size)
        schedule = plan_schedule(first, train)
        return RunPlan((Phase(0, schedule.epochs, first, schedule.peak_lr, 0, 0),), schedule)
    plans = []
    for number, (_, batch, *_) in enumerate(train.batch_schedule, start=1):
        try:
            plans.append(plan(batch))
        except ConfigError as err:
            raise ConfigError(KEY, [list(p) for p in train.batch_schedule], f"phase {number}'s batch {batch} "
                              f"fails {err.key}'s rule: {err.allowed}") from None
    first, schedule = plans[0], plan_schedule(plans[0], train)
    if len(train.batch_schedule[0]) == 3:  # the first phase's own lr_factor: the warm-up rises to its peak
        schedule = plan_schedule(first, replace(train, lr_factor=train.batch_schedule[0][2]))
    phases, step, samples = [], 0, 0
    ends = [phase[0] for phase in train.batch_schedule[1:]] + [train.epochs]
    for (start, _, *factor), end, plan in zip(train.batch_schedule, ends, plans):
        if factor:  # as a fixed run at this batch with this lr_factor
            peak = plan_schedule(plan, replace(train, lr_factor=factor[0])).peak_lr
        else:
            peak = schedule.peak_lr * LR_FACTORS[train.lr_scaling](plan.global_batch_size / first.global_batch_size)
        phases.append(Phase(start, end, plan, peak, step, samples))
        step, samples = step + (end - start) * plan.steps_per_epoch, samples + (end - start) * train_size
    if schedule.warmup_steps > phases[0].steps:
        raise ConfigError(KEY, [list(p) for p in train.batch_schedule], f"a first phase that holds the warm-up "
                          f"(warmup_epochs={train.warmup_epochs:g} runs past its {phases[0].end_epoch} epochs)")
    return RunPlan(tuple(phases), replace(schedule, planned_steps=step))


def bn_momentum(rho: float, phase: Phase, first: Phase) -> float:
    """The EMA rule at a phase: the first phase's batch-norm momentum `rho` to the power of the batch ratio, kept at
    or above the rule's floor (harness.config.batching.ema_momentum)."""
    ratio = phase.plan.global_batch_size / first.plan.global_batch_size
    return rho if ratio == 1 else ema_momentum(rho, ratio)[0]


def clipped(rho: float, planned: RunPlan) -> list[str]:
    """Where the EMA rule's momentum from `rho` is clipped at its floor in a phase of `planned`, in words (run.json's
    notes): the moving averages there span fewer samples than the first phase's."""
    first = planned.phases[0]
    return [f"phase {number} (batch {phase.plan.global_batch_size}): {said}"
            for number, phase in enumerate(planned.phases, start=1) if phase.plan.global_batch_size !=
            first.plan.global_batch_size
            for said in ema_momentum(rho, phase.plan.global_batch_size / first.plan.global_batch_size)[1]]
