"""Sweep-level performance: the main job's wall time, parallel throughput, and peak memory per run.

    python -m benchmarks.bench_sweep                  # medians of 3
    python -m benchmarks.bench_sweep --update-readme  # also rewrite the README's sweep table
    python -m benchmarks.bench_sweep --smoke          # one tiny round, to check the script works

  main job     `python -m harness batch_size=8,32,64,128 -m`, start-ups and report included;
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



def sweep(args: list[str], sweep_dir: Path) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness", *args, f"hydra.sweep.dir={sweep_dir}", "-m"],
                          capture_output=True, text=True, cwd=sweep_dir.parent,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # this checkout's harness
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return seconds, [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/run.json"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="600 samples, 1 epoch, 1 repeat")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args(argv)
    extra = ["dataset.num_samples=600", "epochs=1"] if args.smoke else []
    repeats = 1 if args.smoke else args.repeats
    main_job, serial, parallel, memory = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            seconds, runs = sweep(["batch_size=8,32,64,128", *extra], Path(tmp) / f"main-{r}")
            main_job.append(seconds)
            memory += [run["peak_memory_mb"] for run in runs]
            for n_jobs, into in ((1, serial), (2, parallel)):
                seconds, runs = sweep(["batch_size=32", "seed=0,1", f"hydra.launcher.n_jobs={n_jobs}", *extra],
                                      Path(tmp) / f"pair-{n_jobs}-{r}")
                samples = sum(int(pd.read_parquet(f)["train_size"].sum())
                              for f in (Path(tmp) / f"pair-{n_jobs}-{r}").glob("*/metrics.parquet"))
                into.append(samples / seconds)
                memory += [run["peak_memory_mb"] for run in runs]
            print(f"# repeat {r + 1}: main job {main_job[-1]:.1f} s, throughput n_jobs=1 {serial[-1]:.0f}, "
                  f"n_jobs=2 {parallel[-1]:.0f} samples/s", file=sys.stderr, flush=True)
    med = statistics.median
    text = "\n".join([
        f"Median of {repeats} (MNIST-1D convnet, default epochs unless smoke).",
        "",
        "| measure | value |",
        "| --- | ---: |",
        f"| main job `python -m harness batch_size=8,32,64,128 -m`, wall time | {med(main_job):.1f} s |",
        f"| two equal runs, throughput with n_jobs=2 ÷ n_jobs=1 | {med(parallel) / med(serial):.2f}x |",
        f"| peak memory of one run (largest seen) | {max(memory):.0f} MB |",
    ])
    print(text)
    if args.update_readme:
        from benchmarks.readme_section import replace_section

        replace_section("sweep-performance", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
