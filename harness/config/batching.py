"""Every batch-size-derived quantity, computed in one place and stored in every metrics row."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from harness.fields import ConfigError


@dataclass(frozen=True)
class BatchPlan:
    batch_size: int               # the configured value
    global_batch_size: int        # samples per optimizer step, all replicas together
    per_replica_batch_size: int
    replicas: int
    train_size: int
    steps_per_epoch: int          # the last batch of an epoch may be smaller
    steps_per_execution: int      # optimizer steps per compiled call; divides steps_per_epoch

    def as_columns(self) -> dict[str, int]:
        columns = asdict(self)
        del columns["batch_size"], columns["steps_per_execution"]  # config columns already
        return columns

    def describe(self) -> str:
        return (
            f"global batch {self.global_batch_size} = {self.replicas} replica(s) x {self.per_replica_batch_size}; "
            f"{self.train_size} training samples -> {self.steps_per_epoch} steps per epoch"
        )


# Where a target is checked within epochs (harness.run.target), a compiled call covers at most TARGET_CHUNK steps
# or CHECK_SPACING of an epoch, whichever is more: within 10% of the ~50 steps the largest batches need on MNIST-1D
# (a limit of 10 left batch 512, 8 steps an epoch, at an 11% resolution), and no finer than the checks themselves
# after the first epoch, which are CHECK_SPACING of the step count apart. Calls of 5 steps at batch 8 (450 an
# epoch) doubled its training time (Keras's Python between calls); calls of 18 keep the check within 5% there.
TARGET_CHUNK = 5
CHECK_SPACING = 0.05


def plan_batches(batch_size: int, per_replica_batch: bool, replicas: int, train_size: int,
                 steps_per_execution: int = 0, check_target: bool = False, backend: str = "tensorflow",
                 host_devices: bool = False) -> BatchPlan:
    """Global and per-replica batch, steps per epoch and steps per compiled call; raises ConfigError.

    A global batch that does not divide by the replica count is refused rather than split unevenly, so every
    replica always sees the same number of samples per step. steps_per_execution 0 is automatic: a whole epoch
    per call on one replica, one step per call under MirroredStrategy, where Keras 3's multi-step loop fails
    ("must feed a value for placeholder"). On JAX (`backend`), Keras's DataParallel runs the multi-step loop over
    several replicas too (checked with Keras 3.15 / JAX 0.10: the same losses as one step per call), so a whole epoch
    per call there as well; but JAX shards every batch evenly, so the epoch's last, smaller batch must also divide
    by the replicas. Except on JAX's simulated host devices (`host_devices`): with a call's steps dispatched at
    once, XLA:CPU deadlocked their all-reduce (an abort after 40 s, at batch 8 on MNIST-1D in every try, JAX 0.10),
    so one step per call there, each waited for (harness.run.train.StepSync). With `check_target`
    (target_tune_acc), automatic is the largest divisor of the epoch up to TARGET_CHUNK steps or CHECK_SPACING of
    the epoch, whichever is more: the target can only be checked between compiled calls.
    """
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    global_batch = batch_size * replicas if per_replica_batch else batch_size
    if global_batch % replicas:
        raise ConfigError("batch_size", batch_size, f"a multiple of gpus={replicas} so every replica gets the same "
                        "share, or per_replica_batch=true")
    if not 1 <= global_batch <= train_size:
        limit = train_size // replicas if per_replica_batch else train_size
        what = f" divided by gpus={replicas} (per_replica_batch=true)" if per_replica_batch else ""
        raise ConfigError("batch_size", batch_size, f"an integer from 1 to {limit}: the training-set size "
                        f"{train_size}{what}")
    steps_per_epoch = math.ceil(train_size / global_batch)
    multi_step = replicas == 1 or (backend == "jax" and not host_devices)  # Keras's multi-step loop runs here
    last = train_size - (steps_per_epoch - 1) * global_batch
    if backend == "jax" and last % replicas:
        raise ConfigError("batch_size", batch_size, f"a global batch whose epoch ends in a batch that splits evenly "
                          f"over gpus={replicas} on JAX (the {train_size} training samples leave a last batch of "
                          f"{last}); or a training size that divides by the batch")
    if steps_per_execution > 1 and not multi_step:
        why = ("JAX's simulated host devices deadlock with several steps in flight" if backend == "jax" else
               "Keras's multi-step loop fails under MirroredStrategy")
        raise ConfigError("steps_per_execution", steps_per_execution, f"0 or 1 with gpus={replicas} ({why})")
    # A compiled call must not run into the next epoch's batches, so it covers a divisor of the epoch.
    if steps_per_execution and steps_per_epoch % steps_per_execution:
        raise ConfigError("steps_per_execution", steps_per_execution, f"0 (a whole epoch per call) or a divisor of "
                        f"the {steps_per_epoch} steps per epoch")
    automatic = steps_per_epoch if multi_step else 1
    if check_target and multi_step:
        most = max(TARGET_CHUNK, math.floor(CHECK_SPACING * steps_per_epoch))
        automatic = max(k for k in range(1, min(most, steps_per_epoch) + 1) if steps_per_epoch % k == 0)
    return BatchPlan(
        batch_size=batch_size,
        global_batch_size=global_batch,
        per_replica_batch_size=global_batch // replicas,
        replicas=replicas,
        train_size=train_size,
        steps_per_epoch=steps_per_epoch,
        steps_per_execution=steps_per_execution or automatic,
    )


def samples_seen(plan: BatchPlan, steps: int) -> int:
    """Training samples in the first `steps` updates: every epoch's last batch holds what is left of the epoch."""
    epochs, within = divmod(steps, plan.steps_per_epoch)
    return epochs * plan.train_size + min(within * plan.global_batch_size, plan.train_size)


@dataclass(frozen=True)
class Schedule:
    peak_lr: float        # lr x lr_factor, scaled with the global batch when lr_scaling asks for it
    warmup_steps: int     # linear warm-up from 0 to peak_lr over this many updates (0: none)
    epochs: int           # epochs to run (with budget=steps, enough to hold budget_steps)
    total_steps: int | None  # with budget=steps: exactly this many updates, the last epoch cut short
    shape: str = "constant"  # after the warm-up: constant, cosine or linear (to 0 at the last step), step (/10 at
    planned_steps: int = 0   # 1/2 and 3/4 of planned_steps); the run's own budget of updates

    def lr_at(self, step: int) -> float:
        """The learning rate of update `step` (0-based), as the run's schedule gives it (harness.run.train)."""
        if self.warmup_steps > 0 and step < self.warmup_steps:
            return self.peak_lr * min(1.0, (step + 1) / self.warmup_steps)
        last = self.planned_steps - 1
        if self.shape in ("cosine", "linear"):
            progress = min(1.0, max(0.0, (step - self.warmup_steps) / max(1, last - self.warmup_steps)))
            factor = 0.5 * (1 + math.cos(math.pi * progress)) if self.shape == "cosine" else 1.0 - progress
            return self.peak_lr * factor
        if self.shape == "step":
            return self.peak_lr * 0.1 ** sum(step >= b for b in self.step_boundaries)
        return self.peak_lr

    @property
    def step_boundaries(self) -> tuple[int, int]:
        """`step`'s updates where the rate falls tenfold: half and three quarters of the planned steps."""
        return self.planned_steps // 2, (3 * self.planned_steps) // 4


LR_FACTORS = {"none": lambda ratio: 1.0, "linear": lambda ratio: ratio, "sqrt": math.sqrt}


def plan_schedule(plan: BatchPlan, train) -> Schedule:
    """Learning rate, warm-up and length of training for one run (`train` is a TrainConfig).

    lr_scaling follows Goyal et al. (linear) and Hoffer et al. (sqrt): lr x lr_factor x f(global batch /
    base_batch_size); lr_factor is the point of a learning-rate grid (+study=tuned).
    """
    peak_lr = train.lr * train.lr_factor * LR_FACTORS[train.lr_scaling](plan.global_batch_size / train.base_batch_size)
    warmup_steps = int(round(train.warmup_epochs * plan.steps_per_epoch))
    shape = train.lr_schedule
    if train.budget == "steps":
        # no budget_steps: the updates base_batch_size takes in `epochs` epochs (steps-matched to the base batch)
        steps = train.budget_steps or math.ceil(plan.train_size / train.base_batch_size) * train.epochs
        return Schedule(peak_lr, warmup_steps, math.ceil(steps / plan.steps_per_epoch), steps, shape, steps)
    return Schedule(peak_lr, warmup_steps, train.epochs, None, shape, train.epochs * plan.steps_per_epoch)


# the EMA rule's lowest batch-norm momentum (and recover's search's default low end): an average over about
# 1 / (1 - 0.5) = 2 steps; below it the moving statistics are little more than the last batch's
BN_MOMENTUM_FLOOR = 0.5


def ema_momentum(rho: float, ratio: float) -> tuple[float, list[str]]:
    """The EMA rule: the batch-norm momentum at a batch `ratio` times larger, rho^ratio, kept at or above
    BN_MOMENTUM_FLOOR; (momentum, what was clipped in words)."""
    wanted = rho ** ratio
    if wanted >= BN_MOMENTUM_FLOOR:
        return float(f"{wanted:.4g}"), []
    return BN_MOMENTUM_FLOOR, [f"batch-norm momentum {rho:g}^{ratio:g} = {wanted:.4g} clipped to {BN_MOMENTUM_FLOOR:g}"]
