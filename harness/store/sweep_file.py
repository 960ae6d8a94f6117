"""sweep.json, a sweep's plan: every job the command runs, written before any of them starts, read by the harness's
Hydra sweeper and launchers (which run it as it is), by a resume (which compares each job's config fingerprint) and
by the report (which runs have not started).

    {"format": 2, "study": "diagnose",                 # the study preset the command named (+study=...), or null
     "rounds": 1,                                      # the rounds planned so far (a round may have no job)
     "more_rounds": false,                             # true while a study that plans in rounds has more to plan
     "jobs": [{"job": "0", "round": 1,                  # a study that plans in rounds appends later rounds' jobs
               "arm": null,                             # what a later round's job is to its study ("trial_3")
               "overrides": ["batch_size=8", ...],      # the job's task overrides, as its run records them
               "config": "051f473c36965e7b",            # its RunConfig's fingerprint (run_files.config_hash)
               "gpus": 0, "devices": null, "simulate_devices": false, "backend": "tensorflow",
               "epochs": 5,                             # what its launcher needs, so nothing composes a job again
               "continues": null},                      # a later round's job that continues job N's paused run
              ...],
     "added_seeds": [{"seeds": [2], "jobs": ["8", ...], "at": "..."}],  # python -m harness.resume --add-seeds
     "diagnose": {...},                                 # what the study planned beside the jobs (its own key)
     "study_paths": ["/home/me/conf/studies"]}          # a user's own study: the folders it is found in (else none)

A sweep.json of format 1 (before 2026-12) has only each job's `job`, `overrides` and `config`.

Rounds (+study=recover): the command writes round 1's jobs; once a round's runs have ended, round r+1 is computed
from their files (harness.launch.rounds) and its jobs appended, numbered after every job and run folder before them.
The same command again rewrites round 1 and keeps the later rounds' jobs it had planned (`keep_later_rounds`), so a
round planned again the same keeps its job numbers, and its finished runs are not run again.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.store.files import DamagedFile, read_json, write_json
from harness.store.layout import SWEEP_FILE

FORMAT = 2
REFUSED, STOPPED = "refused", "stopped"  # a later round's jobs a study proposed that could not be planned; why
# its rounds ended early (harness.launch.rounds)


@dataclass(frozen=True)
class PlannedJob:
    job: str                              # its number, the run folder's name
    overrides: list[str]
    config: str                           # its config's fingerprint
    round: int = 1
    gpus: int = 0
    devices: list[int] | None = None
    simulate_devices: bool = False
    backend: str = "tensorflow"
    epochs: int = 1                       # epochs it will train (a step budget decides them from the batch size)
    steps: int | None = None              # optimizer steps it will take (None: unknown before its data load)
    arm: str | None = None                # a later round's job: what it is to the study's plan
    alone: bool = False                   # runs with no other run of the sweep beside it (a time measured alone)
    added: bool = False                   # a seed added after the command (python -m harness.resume --add-seeds)
    continues: str | None = None          # the job whose paused run it continues (harness.store.fork), or None

    @property
    def num(self) -> int:
        return int(self.job)


def as_record(job: PlannedJob) -> dict[str, Any]:
    """A job as sweep.json lists it."""
    return asdict(job)


def record(jobs: list[PlannedJob], study: str | None, planned: dict[str, Any]) -> dict[str, Any]:
    """sweep.json's content: `study` the preset's name, `planned` what the study planned beside the jobs."""
    return {"format": FORMAT, "study": study, "jobs": [asdict(job) for job in jobs], "rounds": 1, **planned}


def keep_later_rounds(content: dict[str, Any], earlier: dict[str, Any] | None) -> dict[str, Any]:
    """`content` (a command's round 1) with the later rounds' jobs and the added seeds' jobs of the `earlier`
    sweep.json of its folder, where that planned the same round 1 (the same jobs and fingerprints): what a resume
    writes."""
    if not earlier or earlier.get("format", 1) < FORMAT:
        return content
    first = [(job["job"], job["overrides"], job["config"]) for job in content["jobs"]]
    before = [(job["job"], job["overrides"], job["config"]) for job in earlier["jobs"]
              if job.get("round", 1) == 1 and not job.get("added")]
    later = [job for job in earlier["jobs"] if job.get("round", 1) > 1 or job.get("added")]
    if first != before or not later:
        return content
    rounds = max(int(earlier.get("rounds", 1)), *(job.get("round", 1) for job in later))
    added = {"added_seeds": earlier["added_seeds"]} if earlier.get("added_seeds") else {}
    return {**content, "jobs": [*content["jobs"], *later], "rounds": rounds, **added}


def added_seeds(content: dict[str, Any] | None) -> list[int]:
    """The seeds added to the sweep after its command (`added_seeds`: python -m harness.resume --add-seeds), in
    order."""
    return [int(seed) for addition in (content or {}).get("added_seeds", []) for seed in addition["seeds"]]


def more_rounds(content: dict[str, Any] | None) -> bool:
    """Whether the sweep's study has rounds left to plan (a sweep.json without the key has none)."""
    return bool((content or {}).get("more_rounds", False))


def write(sweep_dir: Path, content: dict[str, Any]) -> None:
    """sweep.json (record's), atomically."""
    write_json(Path(sweep_dir) / SWEEP_FILE, content)


def refused(content: dict[str, Any] | None) -> dict[str, str]:
    """{arm: its one-line error} of the jobs a study proposed that could not be planned (`refused`,
    harness.launch.rounds)."""
    return {r["arm"]: r["error"] for r in (content or {}).get(REFUSED, []) if r.get("arm")}


def stopped(content: dict[str, Any] | None) -> str | None:
    """Why the study planned no more rounds where one could not be planned (`stopped`); None where none failed."""
    found = (content or {}).get(STOPPED)
    return None if not found else f"round {found['round']} could not be planned: {found['error']}"


def read(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep's sweep.json as written, or None without one (or a damaged one)."""
    try:
        return read_json(Path(sweep_dir) / SWEEP_FILE)
    except DamagedFile:
        return None


def planned_jobs(sweep_dir: Path) -> list[PlannedJob] | None:
    """Every job of the sweep's plan, or None where there is none a launcher can run as it is (no sweep.json, a
    damaged one, or one of format 1)."""
    sweep = read(sweep_dir)
    if sweep is None or sweep.get("format", 1) < 2:
        return None
    return [PlannedJob(**job) for job in sweep["jobs"]]


def runs_alone(run_dir: Path) -> bool:
    """Whether the plan of the sweep the run folder is in has its job run alone (a study's time measured)."""
    run_dir = Path(run_dir)
    return any(job.job == run_dir.name and job.alone for job in planned_jobs(run_dir.parent) or [])


def next_number(sweep_dir: Path, content: dict[str, Any]) -> int:
    """The number a newly planned job takes: after every job of `content` and every run folder of the sweep (a
    folder a round planned differently before keeps its runs, and no new job reuses it)."""
    numbers = [int(job["job"]) for job in content["jobs"]]
    numbers += [int(path.name) for path in Path(sweep_dir).iterdir() if path.is_dir() and path.name.isdigit()]
    return max(numbers, default=-1) + 1


def config_hashes(sweep_dir: Path) -> dict[str, str]:
    """Job number -> config fingerprint, from the sweep's sweep.json (empty without one)."""
    return {job["job"]: job["config"] for job in (read(sweep_dir) or {}).get("jobs", []) if "config" in job}
