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


def test_a_config_is_composed_once_returned_as_a_copy_and_composed_again_when_a_file_changes(tmp_path, monkeypatch):
    """The same overrides give the same config, a copy the caller may change; a YAML file of a --config-dir folder
    rewritten with the same size (in the same clock tick, its modification time may not move) gives the new
    content, as does another working directory (the config records it)."""
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from harness.config.compose import CONF_DIR

    (tmp_path / "mine" / "extra").mkdir(parents=True)
    (tmp_path / "mine" / "extra" / "a.yaml").write_text("value: 1\n")
    overrides = [f"hydra.searchpath=[file://{tmp_path / 'mine'}]", "+extra=a", "batch_size=64"]
    hydra_internals._COMPOSED.clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=hydra_internals.VERSION_BASE):
        first = hydra_internals.compose("config", overrides, return_hydra_config=True)
        assert first.extra.value == 1 and first.batch_size == 64 and len(hydra_internals._COMPOSED) == 1
        first.batch_size = 8  # the caller's copy
        again = hydra_internals.compose("config", overrides, return_hydra_config=True)
        assert again.batch_size == 64 and len(hydra_internals._COMPOSED) == 1  # not composed again
        assert OmegaConf.to_container(again.extra) == {"value": 1}
        (tmp_path / "mine" / "extra" / "a.yaml").write_text("value: 2\n")
        assert hydra_internals.compose("config", overrides, return_hydra_config=True).extra.value == 2
        monkeypatch.chdir(tmp_path)
        moved = hydra_internals.compose("config", overrides, return_hydra_config=True)
        assert moved.hydra.runtime.cwd == str(tmp_path)
