"""The studies found by name: `harness.studies.<name>` (a folder of this package), or `<name>/` in a folder of the
user's (`paths`); each exposes its `Study` as `STUDY`. Nothing lists them: a new folder is a new study.

A study's name is also what `+study=` chose and what sweep.json's `study` records, so a report, a results table
or a resume finds the same study again from the files. A preset without a folder (causes, shuffle, ...) has no
study here: its sweeps are read as batch-size studies.

A study that cannot load fails loudly, in one line naming the path and what is expected (exit 2 for a command): a
folder whose `__init__.py` sets no `STUDY` (or not a `Study`), or raises as it is imported, and a user's folder with
a built-in study's name (each name is one study). A sweep is read as a batch-size sweep, with a line in its report
saying why, when its study cannot be loaded or the user's folder it recorded is gone; listing every study (to read
a sweep recorded without a study's name) passes over a user's folder that is not a study, a helper package say.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from harness.fields import ConfigError
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
    """The study named `name` (None: no study, a preset without a folder, or not a study's name); raises
    ConfigError, naming `+study` and the folder, for a study that cannot load (the module's docstring)."""
    if name is None or not NAME.fullmatch(str(name)):
        return None
    mine = [Path(folder) for folder in paths if (Path(folder) / name / "__init__.py").is_file()]
    if (PACKAGE / name / "__init__.py").is_file():
        if mine:
            raise ConfigError("+study", name, f"one study of each name: {mine[0] / name} has the name of the "
                              f"built-in study {name} (harness/studies/{name}); rename your folder and its preset")
        return _study(PACKAGE, name)
    return _study(mine[0], name) if mine else None


def _study(folder: Path, name: str) -> Study:
    path = folder / name / "__init__.py"
    try:
        module = _load(folder, name)
    except Exception as err:  # anything the user's module raises as it is imported
        raise ConfigError("+study", name, f"a study folder that imports: {path} raised {type(err).__name__}: "
                          f"{err}") from None
    study = getattr(module, "STUDY", None)
    if not isinstance(study, Study):
        has = "no STUDY" if study is None else f"STUDY = a {type(study).__name__}"
        raise ConfigError("+study", name, f"a study folder whose __init__.py sets STUDY to an instance of "
                          f"harness.studies.study.Study; {path} has {has}")
    return study


def every(paths: Iterable[Path] = ()) -> list[Study]:
    """Every study found, by name: the built-in ones, then a user's folders that are studies (one with a built-in
    study's name, or that is no study, is passed over here: the command that names it is refused)."""
    found = []
    for folder in _folders(paths):
        for child in sorted(folder.iterdir()) if folder.is_dir() else []:
            if not NAME.fullmatch(child.name) or not (child / "__init__.py").is_file():
                continue
            if folder != PACKAGE and (PACKAGE / child.name / "__init__.py").is_file():
                continue
            try:
                found.append(_study(folder, child.name))
            except ConfigError:
                if folder == PACKAGE:
                    raise
    return list({study.name or id(study): study for study in found}.values())


def detect(sweep, paths: Iterable[Path] = ()) -> Study | None:
    """The study a sweep recorded without a study's name is, from its files: the first, in priority order, whose
    `detects` holds."""
    tried = sorted((s for s in every(paths) if s.priority is not None), key=lambda s: (s.priority, s.name))
    return next((study for study in tried if study.detects(sweep)), None)


def of_sweep(sweep, paths: Iterable[Path] = ()) -> Study | None:
    """The study of a sweep: the one its sweep.json names (None for a preset without a folder, or a study that
    cannot be loaded: `read` says why), else detected; a user's study is found in the folders sweep.json
    records (`study_paths`)."""
    return _of_sweep(sweep, paths)[0]


def _of_sweep(sweep, paths: Iterable[Path]) -> tuple[Study | None, str | None]:
    recorded = recorded_paths(sweep.plan)
    paths = [*paths, *recorded]
    if sweep.study is None:
        return detect(sweep, paths), None
    try:
        study = find(sweep.study, paths)
    except ConfigError as err:
        return None, f"This sweep is read as a batch-size sweep: its study cannot be loaded ({err})."
    if study is None and recorded:
        where = ", ".join(str(path) for path in recorded)
        return None, (f"This sweep is read as a batch-size sweep: its study, {sweep.study}, was in {where} when it "
                      f"ran, and no folder {sweep.study}/ with an __init__.py is there now (put it back to read the "
                      "sweep by its study).")
    return study, None


def recorded_paths(content: dict | None) -> list[Path]:
    """The folders of a user's studies a sweep.json records (`study_paths`), none for a built-in study's."""
    return [Path(path) for path in (content or {}).get("study_paths", [])]


@dataclass(frozen=True)
class Read:
    """A sweep's study (None: a batch-size sweep), its assessment, and why the study it names is not the one it is
    read by (None where it is): found once, for a page that needs all three."""

    study: Study | None
    assessment: Any
    not_loaded: str | None


def read(sweep, paths: Iterable[Path] = ()) -> Read:
    """A sweep (or its folder) read by its study, the study found once."""
    from harness.assess.sweep import Sweep
    from harness.assess.sweep import read as read_sweep

    sweep = sweep if isinstance(sweep, Sweep) else read_sweep(sweep)
    study, why = _of_sweep(sweep, paths)
    return Read(study, _assess(sweep, study, paths), why)


def assess(sweep, paths: Iterable[Path] = ()):
    """A sweep (or its folder) read by its study (harness.assess.assessment.assess for a batch-size study)."""
    return read(sweep, paths).assessment


def _assess(sweep, study: Study | None, paths: Iterable[Path]):
    from harness.assess.assessment import assess as batch_size
    from harness.assess.assessment import with_next_steps

    a = batch_size(sweep) if study is None else study.assess(sweep)
    if a.reading is not None:  # a study's own reading: its verdict reads the runs as they are, no next step
        return a
    return with_next_steps(a, [lambda v, s=s: _step(s, v) for s in _offering(paths)])


def offering_next_steps(paths: Iterable[Path] = (), one_change: bool = False) -> list[str]:
    """The names of the studies that offer a batch-size verdict a next step (Study.next_step), in priority order;
    `one_change`: only those whose step runs one change at a time (Study.one_change)."""
    return [study.name for study in _offering(paths) if study.one_change or not one_change]


def _offering(paths: Iterable[Path]) -> list[Study]:
    return sorted((s for s in every(paths) if type(s).next_step is not Study.next_step),
                  key=lambda s: (s.priority is None, s.priority or 0, s.name))


def _step(study: Study, verdict) -> tuple[str, str, str] | None:
    found = study.next_step(verdict)
    return None if found is None else (study.name, *found)


def _load(folder: Path, name: str):
    if folder == PACKAGE:
        return importlib.import_module(f"{__package__}.{name}")
    module_name = f"{USER_PACKAGE}.{name}"
    path = folder / name / "__init__.py"
    cached = sys.modules.get(module_name)
    if cached is not None and Path(getattr(cached, "__file__", "") or "") == path:
        return cached  # the same folder's study again; another folder's study of that name is loaded afresh
    if USER_PACKAGE not in sys.modules:
        parent = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(USER_PACKAGE, None, is_package=True))
        parent.__path__ = []
        sys.modules[USER_PACKAGE] = parent
    spec = importlib.util.spec_from_file_location(module_name, path,
                                                  submodule_search_locations=[str(folder / name)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]  # a module half imported is not kept
        raise
    return module
