"""What a machine needs to run the harness, measured here: the installed size of this environment (and of
TensorFlow in it), and the main job's wall time (the command's, from its start to its report, and the runs'
span), runs at once and memory per run process, from its sweep. Writes the README's `machine-needs` block (its
Quick start).

    python -m scripts.needs sweeps/main --run --update-docs   # runs the main job into sweeps/main, timed
    python -m scripts.needs sweeps/main                       # an existing sweep: the runs' span only
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path

EXTRAS = {"test": "pytest", "jax": "jax", "docs": "mkdocs", "mlflow": "mlflow"}  # extra -> a package it installs
MAIN_JOB = ["batch_size=8,32,64,128"]


@dataclass(frozen=True)
class Sweep:
    runs: int
    epochs: int
    wall_minutes: float
    at_once: int              # the most runs that trained at the same time
    peak_memory_mb: float     # the largest peak resident memory of a run's process


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def installed() -> tuple[int, int, list[str]]:
    """(bytes of this environment's packages, bytes of TensorFlow's among them, the extras installed)."""
    packages = Path(sysconfig.get_paths()["purelib"])
    tensorflow = sum(folder_bytes(p) for p in packages.glob("tensorflow*") if p.is_dir())
    extras = []
    for extra, package in EXTRAS.items():
        try:
            metadata.version(package)
            extras.append(extra)
        except metadata.PackageNotFoundError:
            pass
    return folder_bytes(packages), tensorflow, extras


def read_sweep(sweep_dir: Path) -> Sweep:
    """The sweep's size and cost from its runs' run.json: first start to last end, the most runs whose
    [start, end] overlap, the largest peak memory."""
    records = [json.loads(p.read_text()) for p in Path(sweep_dir).glob("*/run.json")]
    spans = [(datetime.fromisoformat(r["started_at"]), datetime.fromisoformat(r["finished_at"]))
             for r in records if r.get("started_at") and r.get("finished_at")]
    if not spans:
        raise SystemExit(f"scripts.needs: no finished run in {sweep_dir}")
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    at_once = running = 0
    for _, step in events:  # an end sorts before a start at the same instant: a slot handed on is not two runs
        running += step
        at_once = max(at_once, running)
    epochs = max(int(r.get("epochs_completed") or 0) for r in records)
    wall = (max(end for _, end in spans) - min(start for start, _ in spans)).total_seconds() / 60
    memory = max(float(r.get("peak_memory_mb") or 0.0) for r in records)
    return Sweep(len(records), epochs, wall, at_once, memory)


def run_main_job(sweep_dir: Path) -> float:
    """`python -m harness batch_size=8,32,64,128 -m` into the new folder `sweep_dir`; its wall time in seconds."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", *MAIN_JOB, f"hydra.sweep.dir={sweep_dir}", "-m"],
                          stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"scripts.needs: the main job exited {done.returncode}")
    return time.perf_counter() - started


def text(sweep: Sweep, sizes: tuple[int, int, list[str]], command_seconds: float | None = None) -> str:
    total, tensorflow, extras = sizes
    gib = 1024 ** 3
    command = "" if command_seconds is None else (
        f"`python -m harness batch_size=8,32,64,128 -m` took {command_seconds:.0f} s from start to report; ")
    return "\n".join([
        f"- Disk: this environment's packages take {total / gib:.1f} GB, TensorFlow {tensorflow / gib:.1f} GB of "
        f"them (installed with the {', '.join(extras) or 'no'} extras; `pip install -e .` alone takes less).",
        f"- Time: {command}the main job's {sweep.runs} runs of {sweep.epochs} epochs, with the probes, trained in "
        f"{sweep.wall_minutes:.1f} min on this machine's {os.cpu_count()} CPU cores, {sweep.at_once} at once (from "
        "the first run's start to the last one's end; the command adds its start-up, the interpolation and the "
        "report).",
        f"- Memory: each run's process peaked at {sweep.peak_memory_mb:,.0f} MB at most, so plan on that much per "
        "run at once (`hydra.launcher.n_jobs` sets how many).",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="the main job's sweep folder")
    parser.add_argument("--run", action="store_true", help="run the main job into SWEEP (a new folder) first, "
                                                           "timing the command")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the README's machine-needs block")
    args = parser.parse_args(argv)
    if args.run and args.sweep.exists():
        print(f"scripts.needs: error: sweep={str(args.sweep)!r} exists; --run needs a new folder (the command would "
              f"resume it)", file=sys.stderr)
        return 2
    seconds = run_main_job(args.sweep) if args.run else None
    block = text(read_sweep(args.sweep), installed(), seconds)
    print(block)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("machine-needs", block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
