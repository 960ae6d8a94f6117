"""What a large sweep waits for before its first run: the command's plan at 100, 1,000 and 10,000 jobs.

    python -m benchmarks.bench_plan                          # this checkout at 100, 1,000 and 10,000 jobs
    python -m benchmarks.bench_plan --before 0f707c8         # and the code of an earlier commit, beside it
    python -m benchmarks.bench_plan --update-docs --before 0f707c8   # also rewrite docs/performance.md's table
    python -m benchmarks.bench_plan --smoke                  # 20 jobs, this checkout only

The sweep is the issue's: `batch_size=8,16,32,64,128 lr=<10 values> optimizer=adam,sgd seed=<S seeds> epochs=1
train_fraction=0.05 probes=false -m` (100 jobs with one seed). Two measurements per size, each in fresh
processes:
- time to first run: `python -m harness ... -m` started, until the first run's run.json exists (the run has
  begun: its process started, its config checked, its folder locked), then the command is stopped with Ctrl-C;
  the command's peak memory (VmHWM of its own process, not of the runs') is read meanwhile;
- planning per job: `harness.launch.cli.plan_command` alone (expanding, composing and validating every job, the
  folder checks), divided by the jobs.
The earlier code (`--before REV`) runs from a clone of this repository at REV, with this checkout's environment;
its 10,000-job sweep is left out unless --before-max says otherwise (the issue measured ~40 minutes of waiting).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import doc_blocks

LRS = "0.0001,0.0002,0.0005,0.001,0.002,0.005,0.01,0.02,0.05,0.1"
SEEDS = {100: 1, 1000: 10, 10000: 100}  # 5 batch sizes x 10 learning rates x 2 optimizers x seeds


def command(jobs: int) -> list[str]:
    """The sweep of `jobs` jobs (20 for --smoke: 2 batch sizes x 2 learning rates x 5 seeds)."""
    rest = ["epochs=1", "train_fraction=0.05", "probes=false"]
    if jobs not in SEEDS:
        return ["batch_size=8,128", "lr=0.001,0.002", "optimizer=adam", "seed=0,1,2,3,4", *rest]
    return ["batch_size=8,16,32,64,128", f"lr={LRS}", "optimizer=adam,sgd",
            f"seed={','.join(map(str, range(SEEDS[jobs])))}", *rest]


def _peak_mb(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM")),
                float("nan"))


def first_run(jobs: int, code: Path, folder: Path, timeout: float) -> tuple[float, float]:
    """(seconds until the first run's run.json exists, the command's peak MB); the command is then stopped."""
    sweep = folder / "sweep"
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command(jobs), f"hydra.sweep.dir={sweep}", "-m"],
                            cwd=code, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    peak, waited = float("nan"), float("nan")
    while time.perf_counter() - started < timeout and proc.poll() is None:
        peak = max(_peak_mb(proc.pid), peak) if peak == peak else _peak_mb(proc.pid)
        if next(sweep.glob("*/run.json"), None) is not None:
            waited = time.perf_counter() - started
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return waited, peak


PLAN_ONLY = ("import sys, time; from harness.launch.cli import plan_command; started = time.perf_counter(); "
             "plan = plan_command(sys.argv[1:], multirun=True); "
             "print(len(plan.jobs), time.perf_counter() - started)")


def planning(jobs: int, code: Path, folder: Path) -> float:
    """Seconds a job of plan_command, in a fresh process."""
    proc = subprocess.run([sys.executable, "-c", PLAN_ONLY, *command(jobs), f"hydra.sweep.dir={folder / 'plan'}"],
                          cwd=code, capture_output=True, text=True, check=True)
    planned, seconds = proc.stdout.split()
    return float(seconds) / int(planned)


def measure(jobs: int, code: Path, timeout: float) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        per_job = planning(jobs, code, Path(tmp))
        waited, peak = first_run(jobs, code, Path(tmp), timeout)
    return waited, per_job, peak


def _cells(found: tuple[float, float, float] | None, why: str) -> str:
    if found is None:
        return f"{why} | – | –"
    waited, per_job, peak = found
    first = "not within the timeout" if waited != waited else f"{waited:.1f} s"
    return f"{first} | {1000 * per_job:.2f} ms | {peak:.0f} MB"


def row(jobs: int, earlier: tuple[float, float, float] | None, why: str, after: tuple[float, float, float]) -> str:
    """One size's row: (seconds to the first run, planning seconds a job, peak MB) before and after."""
    return f"| {jobs:,} | {_cells(earlier, why)} | {_cells(after, '')} |"


def table(rows: list[str], before: str | None, revision: str) -> str:
    return (f"| jobs | before ({before or '–'}): first run | plan per job | command's peak memory | after "
            f"({revision}): first run | plan per job | command's peak memory |\n"
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n" + "\n".join(rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also measure the code of this git revision")
    parser.add_argument("--before-max", type=int, default=1000, help="the largest sweep to measure at REV")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for a first run")
    parser.add_argument("--smoke", action="store_true", help="20 jobs, this checkout only")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/performance.md")
    args = parser.parse_args(argv)
    sizes = [20] if args.smoke else [100, 1000, 10000]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = None
        if args.before and not args.smoke:
            before = Path(tmp) / "before"
            subprocess.run(["git", "clone", "-q", str(doc_blocks.REPO), str(before)], check=True)
            subprocess.run(["git", "-C", str(before), "checkout", "-q", args.before], check=True)
        for jobs in sizes:
            after = measure(jobs, doc_blocks.REPO, args.timeout)
            earlier = (measure(jobs, before, args.timeout) if before is not None and jobs <= args.before_max
                       else None)
            why = "not measured" if before is None else f"not run (larger than --before-max {args.before_max})"
            rows.append(row(jobs, earlier, why, after))
            print(rows[-1], file=sys.stderr, flush=True)
    revision = subprocess.run(["git", "-C", str(doc_blocks.REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    text = table(rows, args.before, revision)
    print(text)
    if args.update_docs and not args.smoke:
        doc_blocks.replace_section("plan-cost", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
