"""A study of a small batch b against a large one B on one setting (+study=diagnose, +study=recover): the global
batch of a run's config, and the check that a command sweeps two or more batch sizes and the seed only."""
from __future__ import annotations

from harness.config.schema import RunConfig
from harness.fields import ConfigError

SWEPT = ("batch_size", "seed")  # what such a study may sweep; one study per value of anything else


def global_batch(cfg: RunConfig) -> int:
    replicas = max(cfg.device.gpus, 1)
    return cfg.train.batch_size * replicas if cfg.train.per_replica_batch else cfg.train.batch_size


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
