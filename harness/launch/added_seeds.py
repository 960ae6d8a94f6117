"""`python -m harness.resume SWEEP --add-seeds N`: more seeds in the same sweep folder, as jobs of its own.

Resume runs the recorded command again, so changing its seeds would change its round 1 and shift the job numbers.
Instead the added runs are new jobs, numbered after every job and run folder there is (sweep_file.next_number),
appended to sweep.json with `added` set, and kept by every later resume (sweep_file.keep_later_rounds). For the
main job every arm runs on each new seed: each distinct job of the command, its seed replaced by one after the
sweep's highest; a study's sweep gets the runs its reading needs on them (Study.added_jobs: recover's b, B and the
recipe; choose's b as it is and each finalist, against the target already set), each with its arm. sweep.json's
`added_seeds` records each addition (its seeds and when), which the report says: seeds added after a look at the
results are optional stopping, and the stated levels do not account for it.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from harness.config.schema import RunConfig
from harness.store import files, sweep_file
from harness.store.run_files import now_iso
from harness.studies.study import Round

SEED = "seed="


class CannotAdd(ValueError):
    """Seeds that cannot be added to this sweep, and why (one line)."""


def seeds_of(jobs: list[dict]) -> list[int]:
    """The seeds the jobs set on their command lines, in order of first appearance."""
    found: list[int] = []
    for job in jobs:
        for override in job["overrides"]:
            if override.startswith(SEED) and override[len(SEED):].isdigit() and int(override[len(SEED):]) not in found:
                found.append(int(override[len(SEED):]))
    return found


def new_jobs(content: dict, count: int, sweep_dir: Path | None = None) -> list[tuple[list[str], int, str | None, bool]]:
    """(overrides, seed, arm, alone) of each job to add: for the main job every distinct job of the sweep on `count`
    new seeds after its highest, its seed in the place it had (no arm); for a study, the jobs its reading needs there
    (alone where the study times them: a Round with `alone`)."""
    jobs = content["jobs"]
    seeds = seeds_of(jobs)
    if not seeds:
        raise CannotAdd("a sweep whose jobs set seed= (this one's run the config's seed only)")
    new = list(range(max(seeds) + 1, max(seeds) + 1 + count))
    if content.get("study"):
        from harness.studies import registry

        study = registry.find(content["study"], registry.recorded_paths(content))
        found = "no such study is installed" if study is None else study.added_jobs(sweep_dir, content, new)
        if isinstance(found, str):
            raise CannotAdd(f"a sweep whose runs a new seed can extend (+study={content['study']}: {found})")
        alone = isinstance(found, Round) and found.alone
        return [(overrides, _seed(overrides), arm, alone)
                for overrides, arm in (found.jobs if isinstance(found, Round) else found)]
    arms: list[list[str]] = []
    for job in jobs:
        arm = [o if not o.startswith(SEED) else SEED for o in job["overrides"]]
        if arm not in arms:
            arms.append(arm)
    return [([o if o != SEED else f"{SEED}{seed}" for o in arm], seed, None, False) for seed in new for arm in arms]


READABLE = "a sweep with a readable sweep.json of format 2 (made since 2026-12)"


def _seed(overrides: list[str]) -> int:
    return next(int(o[len(SEED):]) for o in overrides if o.startswith(SEED))


def add(sweep_dir: Path, count: int, compose: Callable[[list[str]], RunConfig]) -> list[sweep_file.PlannedJob]:
    """Plan `count` new seeds into the sweep folder's sweep.json (`compose`: a job's overrides to its RunConfig),
    holding the folder as a command does; returns the jobs added. Raises CannotAdd."""
    if count < 1:
        raise CannotAdd(f"--add-seeds {count}: a number of seeds >= 1")
    if not Path(sweep_dir).is_dir():
        raise CannotAdd(READABLE)
    try:  # its plan is read and written whole: never while its command runs and writes it too
        with files.folder_lock(sweep_dir):
            return _add(sweep_dir, count, compose)
    except files.FolderBusy as busy:
        raise CannotAdd(f"a sweep no command is running in (process {busy} is running in it); wait for it to "
                        "end") from None


def _add(sweep_dir: Path, count: int, compose: Callable[[list[str]], RunConfig]) -> list[sweep_file.PlannedJob]:
    from harness.launch.plan import planned_job

    content = sweep_file.read(sweep_dir)
    if content is None or content.get("format", 1) < sweep_file.FORMAT:
        raise CannotAdd(READABLE)
    if sweep_file.more_rounds(content):
        raise CannotAdd("a sweep whose study has planned all its rounds; resume it first")
    planned = new_jobs(content, count, Path(sweep_dir))
    first = sweep_file.next_number(sweep_dir, content)
    added = [dataclasses.replace(planned_job(first + i, overrides, compose(overrides), arm=arm), added=True,
                                 alone=alone)
             for i, (overrides, _, arm, alone) in enumerate(planned)]
    record = {"seeds": sorted({seed for _, seed, *_ in planned}), "jobs": [job.job for job in added], "at": now_iso()}
    sweep_file.write(sweep_dir, {**content, "jobs": [*content["jobs"], *map(sweep_file.as_record, added)],
                                 "added_seeds": [*content.get("added_seeds", []), record]})
    return added
