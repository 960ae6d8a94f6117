"""The studies found by name: `harness.studies.<name>` (a folder of this package), or `<name>/` in a folder of the
user's (`paths`); each exposes its `Study` as `STUDY`. Nothing lists them: a new folder is a new study.

A study's name is also what `+study=` chose and what sweep.json's `study` records, so a report, a results table
or a resume finds the same study again from the files. A preset without a folder (causes, shuffle, ...) has no
study here: its sweeps are read as batch-size studies.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Iterable

from harness.studies.study import Study

PACKAGE = Path(__file__).resolve().parent
NAME = re.compile(r"[a-z][a-z0-9_]*")
USER_PACKAGE = "harness_user_studies"  # where a user's study is imported as a module: harness_user_studies.<name>
USER_FOLDER = "studies"  # a user's studies: <a --config-dir>/studies/<name>/, beside its presets in <that dir>/study/


def user_paths(searchpath: Iterable[str]) -> list[Path]:
    """The folders of a user's own studies: `studies/` in each folder of Hydra's search path the command's
    --config-dir added (`file://DIR`), those that exist."""
    folders = [Path(str(entry).removeprefix("file://")) / USER_FOLDER for entry in searchpath
               if str(entry).startswith("file://")]
    return [folder for folder in folders if folder.is_dir()]


def _folders(paths: Iterable[Path]) -> list[Path]:
    return [PACKAGE, *(Path(p) for p in paths)]


def find(name: str | None, paths: Iterable[Path] = ()) -> Study | None:
    """The study named `name` (None: no study, a preset without a folder, or not a study's name)."""
    if name is None or not NAME.fullmatch(str(name)):
        return None
    for folder in _folders(paths):
        if (folder / name / "__init__.py").is_file():
            module = _load(folder, name)
            return getattr(module, "STUDY", None)
    return None


def every(paths: Iterable[Path] = ()) -> list[Study]:
    """Every study found, by name (a user's study of a built-in one's name is not loaded)."""
    names = sorted({child.name for folder in _folders(paths) if folder.is_dir() for child in folder.iterdir()
                    if NAME.fullmatch(child.name) and (child / "__init__.py").is_file()})
    return [study for study in (find(name, paths) for name in names) if study is not None]


def detect(sweep, paths: Iterable[Path] = ()) -> Study | None:
    """The study a sweep recorded without a study's name is, from its files: the first, in priority order, whose
    `detects` holds."""
    tried = sorted((s for s in every(paths) if s.priority is not None), key=lambda s: (s.priority, s.name))
    return next((study for study in tried if study.detects(sweep)), None)


def of_sweep(sweep, paths: Iterable[Path] = ()) -> Study | None:
    """The study of a sweep: the one its sweep.json names (None for a preset without a folder), else detected; a
    user's study is found in the folders sweep.json records (`study_paths`)."""
    paths = [*paths, *recorded_paths(sweep.plan)]
    return find(sweep.study, paths) if sweep.study is not None else detect(sweep, paths)


def recorded_paths(content: dict | None) -> list[Path]:
    """The folders of a user's studies a sweep.json records (`study_paths`), none for a built-in study's."""
    return [Path(path) for path in (content or {}).get("study_paths", [])]


def assess(sweep, paths: Iterable[Path] = ()):
    """A sweep (or its folder) read by its study (harness.assess.assessment.assess for a batch-size study)."""
    from harness.assess.assessment import assess as batch_size
    from harness.assess.assessment import with_next_steps
    from harness.assess.sweep import Sweep, read

    sweep = sweep if isinstance(sweep, Sweep) else read(sweep)
    study = of_sweep(sweep, paths)
    a = batch_size(sweep) if study is None else study.assess(sweep)
    if a.reading is not None:  # a study's own reading: its verdict reads the runs as they are, no next step
        return a
    offered = sorted((s for s in every(paths) if type(s).next_step is not Study.next_step),
                     key=lambda s: (s.priority is None, s.priority or 0, s.name))
    return with_next_steps(a, [lambda v, s=s: _step(s, v) for s in offered])


def _step(study: Study, verdict) -> tuple[str, str, str] | None:
    found = study.next_step(verdict)
    return None if found is None else (study.name, *found)


def _load(folder: Path, name: str):
    if folder == PACKAGE:
        return importlib.import_module(f"{__package__}.{name}")
    module_name = f"{USER_PACKAGE}.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if USER_PACKAGE not in sys.modules:
        parent = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(USER_PACKAGE, None, is_package=True))
        parent.__path__ = []
        sys.modules[USER_PACKAGE] = parent
    spec = importlib.util.spec_from_file_location(module_name, folder / name / "__init__.py",
                                                  submodule_search_locations=[str(folder / name)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
