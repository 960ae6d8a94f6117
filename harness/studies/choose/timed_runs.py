"""+study=choose's timed runs read from their files. A judging seed's time is what its own run of the printed command
recorded (seconds_to_target, every second from the fit's start included), each run alone in a fresh process: the
confirmation is the timing (choose.timing "measured"). The check reruns the printed command, alone, on a seed that
neither chose nor judged, and says whether its recorded time lands inside the prediction interval the judging
seeds' times give. An older sweep (timing "line") read as it was: each command timed twice, T = C + r x S
(timing.py), its check measured beside that line. Files in, numbers out."""
from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.assess import intervals
from harness.assess.sweep import Sweep
from harness.config.overrides import with_recipe
from harness.store.files import DamagedFile
from harness.studies.choose import answer as answer_of
from harness.studies.choose import timing
from harness.studies.choose.settings import CHECK, RAMPS, TIME, arm, point_jobs, recorded, size_name

REACHED = "reached"  # a check's outcome where its run reached the target (else its status, or "missed")


@dataclass
class Check:
    """A run of the check round: a batch size's candidate rerun alone on a seed, its recorded time to the target
    beside the time predicted for it."""
    size: int
    name: str
    seed: int
    steps: float                 # inf: it missed the target
    measured: float | None       # the printed command's seconds to the target (None: it missed, diverged or failed)
    predicted: float
    within: bool | None = None   # within choose.check_tolerance of the prediction (False: no time at all)
    interval: intervals.Interval | None = None  # where a rerun should fall (a t prediction interval)
    outcome: str = REACHED       # reached, missed, diverged or failed: anything but reached makes the time uncertain

    @property
    def inside(self) -> bool | None:
        """The measured time lies inside the prediction interval (None: no interval, or nothing measured)."""
        if self.interval is None or not self.interval.claims or self.measured is None:
            return None
        return self.interval.low <= self.measured <= self.interval.high

    @property
    def fails(self) -> bool:
        """The rerun makes the time uncertain: it missed the target, diverged or failed, or landed further from its
        prediction than the check allows, or outside its prediction interval."""
        return self.outcome != REACHED or self.within is False or self.inside is False


def read(sweep: Sweep, found, jobs: dict[str, str], timed: pd.DataFrame) -> None:
    """The answer from each judging seed's own timed run, the command it ran, and the check round's reruns."""
    record = (sweep.plan or {})["choose"]
    settings = recorded(record)
    found.check_tolerance = settings.check_tolerance
    if settings.timing == "line":
        read_line(sweep, found, jobs, timed)
        return
    records = {str(r["job"]): r for r in sweep.records}
    found.timing = _timed_status(sweep, records)
    found.answer = answer_of.of(found, lambda size, c: answer_of.measured(size, c, found.judging))
    if found.answer is None:
        return
    for t in found.answer.timed:
        if t.ramp:
            t.phase_seconds_per_step = phase_rates(sweep, t.candidate, found.judging)
    job = found.answer.best.candidate.jobs.get(found.judging[0])
    found.machine = machine(records.get(job, {}))
    found.command = printed(sweep, job, found)
    base = found.answer.base
    found.base_command = printed(sweep, base.candidate.jobs.get(found.judging[0]), found, base)
    for job, name in jobs.items():
        if not name.startswith(CHECK):
            continue
        size, candidate = size_name(name[len(CHECK):])
        check = _check(sweep, records.get(job, {}), job, size, candidate, found, settings.check_tolerance)
        if check is not None:
            found.checks.append(check)


def phase_rates(sweep: Sweep, candidate, seeds: list[int]) -> tuple[float, ...]:
    """A ramp's seconds a step at each of its batches (a fall of the rate at the same batch is that batch's), median
    over the judging seeds' timed runs (checked once an epoch): from the check before the batch's first epoch to
    its last epoch's, or the last check, the time between epochs taken out and its first epoch (its fit's start, a
    switch) kept in, everything included as a single batch size's; the batches no seed's run reached before the
    target left out."""
    phases = json.loads(candidate.recipe["batch_schedule"])
    spans, batches = [], []
    for n, (start, batch, *_) in enumerate(phases):
        end = phases[n + 1][0] if n + 1 < len(phases) else math.inf
        if batches and batch == batches[-1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
            batches.append(batch)
    rates: list[list[float]] = [[] for _ in spans]
    for seed in seeds:
        written = _target(sweep, candidate.jobs.get(seed))
        checks = (written.get("check_times") or []) if written.get("target_check") == "epoch" else []
        points = [[0, 0.0, 0.0]] + [[c[0], c[1], c[2] if len(c) > 2 else 0.0] for c in checks]
        for k, (start, end) in enumerate(spans):
            last = min(end, len(points) - 1)
            if start >= last:
                continue
            (s0, t0, b0), (s1, t1, b1) = points[start], points[last]
            if s1 > s0:
                rates[k].append(((t1 - b1) - (t0 - b0)) / (s1 - s0))
    reached = [float(np.median(r)) for r in rates if r]
    return tuple(reached)


def _timed_status(sweep: Sweep, records: dict[str, dict]) -> dict[tuple[int, str], str]:
    """(size, candidate) -> its timed runs' status: "not started" or "running" while one has not ended, else the
    last one's."""
    out: dict[tuple[int, str], str] = {}
    for job in (sweep.plan or {}).get("jobs", []):
        name = job.get("arm") or ""
        if not job.get("alone") or name.startswith((CHECK, TIME)):
            continue
        status = records.get(str(job["job"]), {}).get("status", "not started")
        key = size_name(name)
        if out.get(key) not in answer_of.NOT_ENDED:
            out[key] = status
    return out


def _check(sweep: Sweep, record: dict, job: str, size: int, name: str, found, tolerance: float) -> Check | None:
    """A check run against its command's judging seeds: None while it has not ended."""
    status = record.get("status")
    if status not in ("completed", *answer_of.FAULTS):
        return None
    seed = int((record.get("config") or {}).get("seed", 0))
    candidate = next((c for c in found.candidates.get(size, []) if c.name == name), None)
    own = None if candidate is None else answer_of.measured(size, candidate, found.judging)
    band = intervals.new_run_interval([]) if own is None else own.prediction
    predicted = band.center if math.isfinite(band.center) else math.inf
    written = _target(sweep, job) if status == "completed" else {}
    seconds, steps = written.get("seconds_to_target"), written.get("steps_to_target")
    if seconds is None:
        outcome = status if status in answer_of.FAULTS else "missed"
        return Check(size, name, seed, math.inf, None, predicted, False, band, outcome)
    within = None if not math.isfinite(predicted) else abs(seconds / predicted - 1) <= tolerance
    return Check(size, name, seed, float(steps), float(seconds), predicted, within, band)


def read_line(sweep: Sweep, found, jobs: dict[str, str], timed: pd.DataFrame) -> None:
    """An older sweep's (choose.timing "line"): the timing round's rates (each run alone: timing.rate of its
    checks, by seed), where it ran, the answer they give, the command they timed, and the check round's runs,
    measured beside predicted."""
    records = {str(r["job"]): r for r in sweep.records}
    by_seed: dict[tuple[int, str], list[tuple[int, timing.Rate]]] = {}
    for job, name in jobs.items():
        if not name.startswith(TIME):
            continue
        size, candidate = size_name(name[len(TIME):])
        status = records.get(job, {}).get("status", "not started")
        if status != "completed":  # a run still to come, or one that failed, is what the key says
            found.timing[(size, candidate)] = status
            continue
        found.timing.setdefault((size, candidate), status)
        written = _target(sweep, job)
        found_rate = (timing.curve(written.get("check_times") or []) if candidate in RAMPS else
                      timing.rate(written.get("check_times") or [], _per_epoch(written)))
        if not written:
            found.timing[(size, candidate)] = answer_of.NO_TARGET_FILE
        elif found_rate is None:
            found.timing[(size, candidate)] = answer_of.TOO_FEW_CHECKS
        elif size is not None:
            seed = (records[job].get("config") or {}).get("seed", 0)
            by_seed.setdefault((size, candidate), []).append((int(seed), found_rate))
            found.machine = found.machine or machine(records[job])
    found.rates = {key: [r for _, r in sorted(pairs, key=lambda p: p[0])] for key, pairs in by_seed.items()}
    found.answer = answer_of.of(found, lambda size, c: answer_of.on_line(size, c, found.rates.get((size, c.name)),
                                                                         found.judging),
                                simultaneous=False) if found.rates else None
    if found.answer is not None:
        wanted = TIME + arm(found.answer.size, found.answer.name)
        found.command = printed(sweep, next((job for job, name in jobs.items() if name == wanted), None), found)
    pairs = run_spread(found.rates)
    for row in timed.to_dict("records"):
        name = jobs.get(str(row["job"]), "")
        if not name.startswith(CHECK):
            continue
        size, candidate = size_name(name[len(CHECK):])
        rates = found.rates.get((size, candidate))
        if not rates:
            continue
        rate, seed = timing.mean(rates), int(row["seed"])
        own = math.inf if row["steps"] is None or pd.isna(row["steps"]) else float(row["steps"])
        written = _target(sweep, str(row["job"]))
        if rate.steps_per_epoch:  # the printed command's shape (a ramp's too): its target run on this seed predicts it
            best = next((c for c in found.candidates.get(size, []) if c.name == candidate), None)
            steps = best.steps.get(seed, own) if best is not None else own
            measured = _net(written)
        else:  # an older sweep's check: timed as its target runs were
            steps, measured = own, records.get(str(row["job"]), {}).get("seconds_to_target")
        predicted = rate.predicted(steps)
        within = None if measured is None or not math.isfinite(predicted) else \
            abs(measured / predicted - 1) <= found.check_tolerance
        found.checks.append(Check(size, candidate, seed, steps, measured, predicted, within,
                                  intervals.prediction_interval(pairs, predicted),
                                  REACHED if measured is not None else "missed"))


def run_spread(rates: dict[tuple[int, str], list[timing.Rate]]) -> list[float]:
    """The log differences between a command's first two timed runs, at the first one's steps, over every command
    timed twice: the machine's spread from one run to the next, which a check's prediction interval holds."""
    return [math.log(runs[0].predicted(runs[0].steps) / runs[1].predicted(runs[0].steps))
            for runs in rates.values() if len(runs) >= 2]


def _target(sweep: Sweep, job: str) -> dict[str, Any]:
    try:
        return sweep.target(job) or {}
    except DamagedFile:
        return {}


def _per_epoch(written: dict[str, Any]) -> int | None:
    """The steps an epoch where the run checked its target once an epoch (its steps round up to them), else None."""
    return written.get("steps_per_epoch") if written.get("target_check") == "epoch" else None


def _net(written: dict[str, Any]) -> float | None:
    """A run's seconds to the target less the time the harness spent between its epochs (None: it missed)."""
    seconds = written.get("seconds_to_target")
    return None if seconds is None else float(seconds) - float(written.get("between_epochs_seconds") or 0.0)


NOT_PRINTED = ("study=", "seed=", "hydra.", "choose.", "target_max_samples=")  # the study's own overrides (a
# timed run's stop after its line's checks): not the user's command


def printed(sweep: Sweep, job: str | None, found, timed=None) -> str:
    """A timed candidate as a command line (`timed`: an answer_of.Timed, by default the answer): the overrides its
    timed run (`job`) ran with, less the study's own, and what the study's config set for every run (the tuning
    slice the target is read on, probes off)."""
    timed = timed or found.answer.best
    overrides = next((list(r.get("overrides") or []) for r in sweep.records if str(r["job"]) == job), None)
    if overrides is None:  # not run yet: as the plan would run it
        point = point_jobs((sweep.plan or {})["choose"])[(timed.size, found.seeds[0])]
        overrides = with_recipe(point, timed.candidate.recipe)
    kept = [o for o in overrides if not o.lstrip("+~").startswith(NOT_PRINTED)]
    config = (sweep.records[0].get("config") or {}) if sweep.records else {}
    study_set = with_recipe(kept, {"tune_fraction": config.get("tune_fraction"), "probes": "false"})
    return "python -m harness " + " ".join(shlex.quote(o) for o in study_set)


def machine(record: dict[str, Any]) -> str:
    """Where a run trained, in a few words: "2 CPU cores, TensorFlow", "1 NVIDIA H100 80GB HBM3, JAX"."""
    environment = record.get("environment", {})
    hardware, backend = environment.get("hardware", {}), environment.get("backend", "tensorflow")
    framework = {"tensorflow": "TensorFlow", "jax": "JAX"}.get(backend, backend)
    gpus = hardware.get("gpus") or []
    if gpus:
        kinds = sorted(set(gpus))
        return f"{len(gpus)} {' + '.join(kinds)}, {framework}" if len(kinds) == 1 else f"{len(gpus)} GPUs, {framework}"
    cores = hardware.get("cpus_usable")
    return f"{cores} CPU cores, {framework}" if cores else f"a CPU, {framework}"
