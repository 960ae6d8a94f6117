"""Hydra's private API in one adapter (harness.config.hydra_internals): pinned to the Hydra it was written for, and
nothing else in the package reaches into hydra._internal."""
from pathlib import Path

import hydra

from harness.config import hydra_internals

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_hydra_is_the_one_the_adapter_was_written_for():
    assert hydra.__version__.split(".")[:2] == hydra_internals.WRITTEN_FOR.split("."), (
        f"Hydra {hydra.__version__}: read harness/config/hydra_internals.py's three calls against it, then update "
        "WRITTEN_FOR")


def test_only_the_adapter_reaches_into_hydras_private_modules():
    users = sorted(str(path.relative_to(REPO)) for folder in ("harness", "hydra_plugins")
                   for path in (REPO / folder).rglob("*.py") if "hydra._internal" in path.read_text())
    assert users == ["harness/config/hydra_internals.py"]


def test_the_adapter_expands_a_sweep_as_hydras_basic_sweeper_does():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(["seed=0,1", "batch_size=8,64", "lr=0.1"])
    assert hydra_internals.split_sweep(parsed) == [
        ["seed=0", "batch_size=8", "lr=0.1"], ["seed=0", "batch_size=64", "lr=0.1"],
        ["seed=1", "batch_size=8", "lr=0.1"], ["seed=1", "batch_size=64", "lr=0.1"]]
