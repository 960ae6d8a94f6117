"""The pieces of Hydra's private API (`hydra._internal`) the command line uses, in one place: Hydra's own
argument parser (so `python -m harness` takes every flag Hydra documents), starting Hydra with it (or a planned
job directly in run mode), and the basic sweeper's expansion of sweep overrides (so the plan expands a command
exactly as Hydra would), a composition kept for the next that asks for the same (`compose`, which reads the
search path from Hydra's loader) and the folders a command adds to that path (`searchpath`). Hydra may change them
in any release: WRITTEN_FOR is the version they were read in, which a test pins against the installed one (and
pyproject.toml keeps hydra-core below 1.4)."""
from __future__ import annotations

from typing import Any, Callable

WRITTEN_FOR = "1.3"
VERSION_BASE = "1.3"  # the Hydra behaviour every composition asks for (initialize_config_dir's version_base)


def args_parser():
    """Hydra's command-line parser (overrides, --multirun, --config-dir, --cfg, ...)."""
    from hydra._internal.utils import get_args_parser

    return get_args_parser()


def run_hydra(args, parser, task_function: Callable[[Any], Any], config_path: str, config_name: str) -> None:
    """Hydra's main for already parsed `args`, as @hydra.main runs it."""
    from hydra._internal.utils import _run_hydra

    _run_hydra(args=args, args_parser=parser, task_function=task_function, config_path=config_path,
               config_name=config_name)


def run_job(overrides: list[str], task_function: Callable[[Any], Any], config_path: str, config_name: str) -> None:
    """One job in run mode, as `run_hydra` runs a command without flags whose config sets no hydra.mode, less its
    first step: composing the whole config once more only to read hydra.mode (about 0.2 s a job). For a job whose
    mode is known: one the command planned and runs in a warm worker."""
    from hydra import version
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import (
        create_automatic_config_search_path,
        detect_calling_file_or_module_from_task_function,
        detect_task_name,
        run_and_report,
    )
    from hydra.core.global_hydra import GlobalHydra

    version.setbase(VERSION_BASE)  # as the command's planning left it in a process that planned first
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(task_function)
    search_path = create_automatic_config_search_path(calling_file, calling_module, config_path)
    hydra = run_and_report(lambda: Hydra.create_main_hydra2(task_name=detect_task_name(calling_file, calling_module),
                                                            config_search_path=search_path))
    try:  # as _run_app does for a config without hydra.mode
        run_and_report(lambda: hydra.run(config_name=config_name, task_function=task_function,
                                         overrides=[*overrides, "hydra.mode=RUN"]))
    finally:
        GlobalHydra.instance().clear()


def split_sweep(parsed_overrides: list) -> list[list[str]]:
    """The jobs Hydra's basic sweeper makes of parsed overrides (their cartesian product, in its order)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper.split_arguments(parsed_overrides, None)[0]


_COMPOSED: dict[tuple, Any] = {}  # what `compose` composed in this process, oldest first
_KEPT = 256


def compose(config_name: str, overrides: list[str], return_hydra_config: bool = False):
    """hydra.compose(config_name, overrides), inside an initialized config dir, composed once in a process for each
    search path, working directory, content of the config files (each YAML file's path and digest) and overrides,
    and returned as a copy the caller may change. Hydra composes the same config again in 0.1 to 0.2 s on the 2-core
    CPU; a study plans its rounds, and a report reads its plan, from the same few configs over and over (a copy:
    about 6 ms). A --config-dir holding many YAML files costs their reading at every call."""
    import copy
    import os

    from hydra import compose as hydra_compose
    from hydra.core.global_hydra import GlobalHydra

    sources = tuple((s.provider, s.path) for s in GlobalHydra.instance().hydra.config_loader.get_sources())
    key = (sources, os.getcwd(), _files([path for provider, path in sources if provider == "main"], overrides),
           config_name, tuple(overrides), return_hydra_config)
    if key not in _COMPOSED:
        if len(_COMPOSED) >= _KEPT:
            del _COMPOSED[next(iter(_COMPOSED))]
        _COMPOSED[key] = hydra_compose(config_name, overrides=list(overrides), return_hydra_config=return_hydra_config)
    return copy.deepcopy(_COMPOSED[key])


def _files(folders: list[str], overrides: list[str]) -> tuple:
    """(path, digest) of every YAML file in the folders (the primary config dir) and in those the overrides add to
    the search path (hydra.searchpath, what --config-dir becomes): its content, not its modification time, which a
    file rewritten within the clock's tick would keep (about 1 ms for the package's 49 files)."""
    import hashlib
    from pathlib import Path

    found = []
    for folder in [*folders, *searchpath(overrides)]:
        root = Path(str(folder).removeprefix("file://"))
        if root.is_dir():
            for path in sorted(root.rglob("*.yaml")):
                found.append((str(path), hashlib.blake2b(path.read_bytes(), digest_size=16).digest()))
    return tuple(found)


def searchpath(overrides: list[str]) -> list[str]:
    """The folders a command adds to Hydra's search path (`hydra.searchpath=[...]`, what --config-dir becomes), read
    as Hydra reads them: a folder's name may hold a comma, a quote or a bracket."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    found = []
    for override in OverridesParser.create().parse_overrides([o for o in overrides if "searchpath" in o]):
        if override.key_or_group.lstrip("+~") == "hydra.searchpath" and not override.is_delete():
            value = override.value()
            found += [str(entry) for entry in (value if isinstance(value, list) else [value])]
    return found
