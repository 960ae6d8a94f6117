"""The three pieces of Hydra's private API (`hydra._internal`) the command line uses, in one place: Hydra's own
argument parser (so `python -m harness` takes every flag Hydra documents), starting Hydra with it, and the basic
sweeper's expansion of sweep overrides (so the plan expands a command exactly as Hydra would). Hydra may change
them in any release: WRITTEN_FOR is the version they were read in, which a test pins against the installed one
(and pyproject.toml keeps hydra-core below 1.4)."""
from __future__ import annotations

from typing import Any, Callable

WRITTEN_FOR = "1.3"


def args_parser():
    """Hydra's command-line parser (overrides, --multirun, --config-dir, --cfg, ...)."""
    from hydra._internal.utils import get_args_parser

    return get_args_parser()


def run_hydra(args, parser, task_function: Callable[[Any], Any], config_path: str, config_name: str) -> None:
    """Hydra's main for already parsed `args`, as @hydra.main runs it."""
    from hydra._internal.utils import _run_hydra

    _run_hydra(args=args, args_parser=parser, task_function=task_function, config_path=config_path,
               config_name=config_name)


def split_sweep(parsed_overrides: list) -> list[list[str]]:
    """The jobs Hydra's basic sweeper makes of parsed overrides (their cartesian product, in its order)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper.split_arguments(parsed_overrides, None)[0]
