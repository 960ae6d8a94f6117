"""The b-vs-B kit: a study of batch sizes against each other on one setting (+study=diagnose and +study=recover: the
small batch b against the large one B; +study=choose: every batch size), planned from the command's own jobs.
Every batch size of the command and every seed is a point; `Pairs` holds each point's job and config, b (the
smallest global batch), B (the largest), the sizes between and the seeds in the command's order. The check that
such a command sweeps two or more batch sizes and the seed only, the global batch of a run's config and the chunk
ghost batch norm at B would normalise (b's per-device batch) with the reason where it does not apply are here too
(a recipe put on a point's job: harness.config.overrides). Pure: configs in, numbers and jobs out."""
from __future__ import annotations

from dataclasses import dataclass

from harness.config.schema import RunConfig
from harness.fields import ConfigError
from harness.models import registry as models

SWEPT = ("batch_size", "seed")  # what such a study may sweep; one study per value of anything else


def global_batch(cfg: RunConfig) -> int:
    replicas = max(cfg.device.gpus, 1)
    return cfg.train.batch_size * replicas if cfg.train.per_replica_batch else cfg.train.batch_size


@dataclass(frozen=True)
class Pairs:
    """The command's points, by (global batch, seed)."""

    jobs: dict[tuple[int, int], list[str]]
    configs: dict[tuple[int, int], RunConfig]
    sizes: list[int]   # every global batch, smallest first
    seeds: list[int]   # in the command's order

    @property
    def small_batch(self) -> int:
        return self.sizes[0]

    @property
    def large_batch(self) -> int:
        return self.sizes[-1]

    def small(self, seed: int | None = None) -> RunConfig:
        """b's config at `seed` (None: the first seed)."""
        return self.configs[(self.small_batch, self.seeds[0] if seed is None else seed)]

    def large(self, seed: int | None = None) -> RunConfig:
        """B's config at `seed` (None: the first seed)."""
        return self.configs[(self.large_batch, self.seeds[0] if seed is None else seed)]

    def job(self, size: int, seed: int) -> list[str]:
        """A copy of the point's job (its overrides)."""
        return list(self.jobs[(size, seed)])

    @property
    def as_is_order(self) -> list[int]:
        """The sizes of a seed's runs as they are, in the order a study plans them: b, B, then the sizes between."""
        return [self.small_batch, self.large_batch, *self.sizes[1:-1]]


def of_command(jobs: list[list[str]], run_configs: list[RunConfig], study: str, one: str, why: str) -> Pairs:
    """The command's points, checked: two or more batch sizes and the seed swept, every other key one value (a
    ConfigError names the key, `study` and `one`, what to run one of per value; `why`: what b against B is for)."""
    check_two_sizes_one_setting(run_configs, study, one, why)
    points = [((global_batch(cfg), cfg.train.seed), job, cfg) for job, cfg in zip(jobs, run_configs)]
    return Pairs({point: job for point, job, _ in points}, {point: cfg for point, _, cfg in points},
                 sorted({size for (size, _), _, _ in points}),
                 list(dict.fromkeys(seed for (_, seed), _, _ in points)))


def check_two_sizes_one_setting(run_configs: list[RunConfig], study: str, one: str, why: str) -> None:
    """A study of b against B sweeps batch_size (two or more) and seed only: the other keys take one value."""
    flats = [cfg.flat() for cfg in run_configs]
    for key in flats[0]:
        values = list(dict.fromkeys(str(flat.get(key)) for flat in flats))
        if key not in SWEPT and len(values) > 1:
            raise ConfigError(key, ",".join(values), f"one value with +study={study}, which sweeps batch_size and "
                              f"seed only: run one {one} per value")
    if len({global_batch(cfg) for cfg in run_configs}) < 2:
        raise ConfigError("batch_size", run_configs[0].train.batch_size, f"two or more batch sizes with "
                          f"+study={study}, {why}")


def ghost_chunk(large: RunConfig, small: RunConfig) -> tuple[int | None, str | None]:
    """(the chunk ghost batch norm at B normalises, b's per-device batch: what b's batch norm normalised together;
    or None and why ghost batch norm does not apply: the harness's layer is the built-in models', and a
    synchronized batch norm normalises the whole global batch)."""
    model = large.model
    if model.source not in models.BUILTIN:
        return None, f"model={model.name}: ghost batch norm is a layer of the built-in models (convnet, mlp)"
    if not model.batch_norm:
        return None, "the model has no batch norm (model.batch_norm=false)"
    if model.sync_batchnorm:
        return None, "model.sync_batchnorm=true normalises the whole global batch"
    chunk = global_batch(small) // max(small.device.gpus, 1)
    if chunk < 2:
        return None, f"the small batch's batch norm normalised {chunk} sample at a time (a chunk needs 2 or more)"
    return chunk, None
