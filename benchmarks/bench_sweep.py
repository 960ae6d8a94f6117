"""Sweep-level performance: the main job with 3 seeds (the default) and with 1, where its time goes, parallel
throughput and peak memory per run.

    python -m benchmarks.bench_sweep                  # medians of 3, the variants interleaved
    python -m benchmarks.bench_sweep --update-docs  # also rewrite the README's sweep tables
    python -m benchmarks.bench_sweep --smoke          # one tiny round, to check the script works

  main job     `python -m harness batch_size=8,32,64,128 -m` (3 seeds per batch size, 12 runs), against
               `... seed=0 -m` (4 runs) and the 3-seed job with a fresh process per run
               (hydra.launcher.reuse_processes=false); start-ups, probes, interpolation and report included;
  where        the 3-seed job's time by phase, from its own files: planning (command start to sweep.json),
               runs (to the last run.json), interpolation (to interpolation.parquet), report (to the end);
               within the runs, slot-seconds (runs phase x parallel slots) split into training epochs, the
               first epoch's extra (tracing), end-of-run probes, in-run set-up and writing (run_seconds minus
               those), and what is outside any run (process start, TensorFlow import, composing the job's
               config, idle slots while the last run finishes);
  parallel     two equal runs (batch 32, seeds 0 and 1) with hydra.launcher.n_jobs=1, then =2: throughput is
               training samples over the sweep's wall time, and the ratio is n_jobs=2 over n_jobs=1;
  memory       the largest peak resident memory of any run in those sweeps (run.json: peak_memory_mb).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
MAIN_JOB = ["batch_size=8,32,64,128"]
FRESH = "3 seeds, a fresh process per run"
VARIANTS = {  # name: extra overrides
    "3 seeds": [],
    "1 seed": ["seed=0"],
    FRESH: ["hydra.launcher.reuse_processes=false"],
}


def sweep(args: list[str], sweep_dir: Path) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness", *args, f"hydra.sweep.dir={sweep_dir}", "-m"],
                          capture_output=True, text=True, cwd=sweep_dir.parent,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # this checkout's harness
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return seconds, [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/run.json"))]


def phases(sweep_dir: Path, started: float, ended: float, slots: int) -> dict[str, float]:
    """Seconds by phase of a finished sweep, from its files' modification times and the runs' own clocks."""
    runs = sorted(p for p in sweep_dir.iterdir() if (p / "run.json").exists())
    planned = (sweep_dir / "sweep.json").stat().st_mtime
    runs_done = max((r / "run.json").stat().st_mtime for r in runs)
    interpolation = sweep_dir / "interpolation.parquet"
    interpolated = interpolation.stat().st_mtime if interpolation.exists() else runs_done
    train = first_extra = probes = in_run = 0.0
    for run in runs:
        record = json.loads((run / "run.json").read_text())
        epochs = pd.read_parquet(run / "metrics.parquet")["epoch_seconds"]
        extra = float(epochs.iloc[0] - epochs.iloc[1:].median()) if len(epochs) > 1 else 0.0
        probe_seconds = json.loads((run / "probes.json").read_text())["seconds"] if (run / "probes.json").exists() else 0.0
        train += float(epochs.sum()) - extra
        first_extra += extra
        probes += probe_seconds
        in_run += record["run_seconds"] - float(epochs.sum()) - probe_seconds
    slot_seconds = (runs_done - planned) * slots
    return {
        "planning and validation": planned - started,
        "runs": runs_done - planned,
        "interpolation": interpolated - runs_done,
        "report": ended - interpolated,
        "slot-seconds in the runs phase": slot_seconds,
        "training epochs": train,
        "first epoch's extra (tracing)": first_extra,
        "end-of-run probes": probes,
        "in-run set-up and writing": in_run,
        "outside any run (start-up, import, job config, idle slots)": slot_seconds - train - first_extra - probes - in_run,
    }


def tables(walls: dict[str, list[float]], counts: dict[str, int], where: list[dict[str, float]], serial: list[float],
           parallel: list[float], memory: list[float], repeats: int, slots: int, smoke: bool) -> tuple[str, str]:
    """The measured seconds, throughputs and memory as the docs' two tables: medians, the ratio of the medians."""
    med = statistics.median
    three, one = med(walls["3 seeds"]), med(walls["1 seed"])
    fresh = f"{med(walls[FRESH]):.1f} s" if walls[FRESH] else "not run in a smoke round"
    table = "\n".join([
        f"Median of {repeats}, the variants interleaved (MNIST-1D convnet, default epochs and probes; "
        f"{os.cpu_count()} CPU cores){'; smoke: tiny data, batch 16 only, no probes' if smoke else ''}.",
        "",
        "| measure | value |",
        "| --- | ---: |",
        f"| main job `python -m harness batch_size=8,32,64,128 -m` (3 seeds, {counts['3 seeds']} runs), wall time "
        f"| {three:.1f} s |",
        f"| the same with `seed=0` (1 seed, {counts['1 seed']} runs), wall time | {one:.1f} s |",
        f"| 3 seeds ÷ 1 seed | {three / one:.2f}x |",
        f"| 3 seeds with a fresh process per run (`hydra.launcher.reuse_processes=false`) | {fresh} |",
        f"| two equal runs, throughput with n_jobs=2 ÷ n_jobs=1 | "
        f"{f'{med(parallel) / med(serial):.2f}x' if serial else 'not run in a smoke round'} |",
        f"| peak memory of one run (largest seen) | {max(memory):.0f} MB |",
    ])
    breakdown = "\n".join([
        f"Where the 3-seed main job's time goes (median of {repeats}; {slots} parallel slots):",
        "",
        "| phase | seconds |",
        "| --- | ---: |",
        *(f"| {name} | {med(w[name] for w in where):.1f} |" for name in where[0]),
    ])
    return table, breakdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="600 samples, 1 epoch, batch 16 only, one worker for the main job, 1 repeat, no "
                             "fresh-process variant and no n_jobs pair")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true", help="rewrite its generated blocks in README.md and docs/")
    args = parser.parse_args(argv)
    # smoke: the same variants on one batch size of tiny data, to check the script in seconds, not to measure
    extra = ["dataset.num_samples=600", "epochs=1", "probes=false"] if args.smoke else []
    main_job = [*MAIN_JOB, *(["batch_size=16", "hydra.launcher.n_jobs=1"] if args.smoke else [])]  # one worker
    repeats = 1 if args.smoke else args.repeats
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    counts: dict[str, int] = {}  # runs per variant
    where: list[dict[str, float]] = []
    serial, parallel, memory = [], [], []
    slots = min(2, os.cpu_count() or 1)  # the launcher's default on this machine: one run per core
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            for v, (name, overrides) in enumerate(VARIANTS.items()):
                if args.smoke and name == FRESH:
                    continue  # the 3-seed job with one override more: three TensorFlow start-ups to check nothing new
                folder = Path(tmp) / f"main-{v}-{r}"
                started = time.time()
                seconds, runs = sweep([*main_job, *overrides, *extra], folder)
                walls[name].append(seconds)
                counts[name] = len(runs)
                memory += [run["peak_memory_mb"] for run in runs]
                if v == 0:
                    where.append(phases(folder, started, started + seconds, slots))
            # the pair: two more commands and three TensorFlow start-ups, through the same sweep helper as above
            for n_jobs, into in () if args.smoke else ((1, serial), (2, parallel)):
                seconds, runs = sweep(["batch_size=32", "seed=0,1", f"hydra.launcher.n_jobs={n_jobs}", *extra],
                                      Path(tmp) / f"pair-{n_jobs}-{r}")
                samples = sum(int(pd.read_parquet(f)["train_size"].sum())
                              for f in (Path(tmp) / f"pair-{n_jobs}-{r}").glob("*/metrics.parquet"))
                into.append(samples / seconds)
                memory += [run["peak_memory_mb"] for run in runs]
            print(f"# repeat {r + 1}: " + ", ".join(f"{n} {w[-1]:.1f} s" for n, w in walls.items() if w)
                  + (f"; throughput n_jobs=1 {serial[-1]:.0f}, n_jobs=2 {parallel[-1]:.0f} samples/s"
                     if serial else ""),
                  file=sys.stderr, flush=True)
    table, breakdown = tables(walls, counts, where, serial, parallel, memory, repeats, slots, args.smoke)
    print(table + "\n\n" + breakdown)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("sweep-performance", table + "\n\n" + breakdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
