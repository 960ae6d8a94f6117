"""What a sweep's report, its results table and the reports index cost at 100, 1,000 and 10,000 runs.

    python -m benchmarks.bench_report                 # constructed sweeps of 100, 1,000 and 10,000 runs
    python -m benchmarks.bench_report --update-docs   # also rewrite docs/performance.md's table
    python -m benchmarks.bench_report --smoke         # 20 runs and an index of 3 sweeps, to check the script works

The sweeps are the test helpers' constructed runs (tests.helpers.sweeps: the real command's jobs and configs, the
files a run writes with made-up numbers, the probes' files and the interpolation added): `batch_size=8,16,32,64,128
lr=<10 values> optimizer=adam,sgd seed=<1, 10 or 100 seeds> epochs=2`, 20 facets. Building them is not timed. Each
of `python -m harness.report SWEEP` and `python -m harness.results SWEEP` is timed in a fresh process, start to
exit: the first report reads every run's files and keeps the sweep's metrics cache (harness.store.metrics_cache),
which the report built again and the results table after it read; the last column is the results table with the
cache removed. The index is `python -m harness.report --index` over a sweeps folder of 100 sweeps of the main
job's 12 runs (each with its report).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import doc_blocks

LRS = "0.0001,0.0002,0.0005,0.001,0.002,0.005,0.01,0.02,0.05,0.1"


def command(seeds: int, smoke: bool = False) -> list[str]:
    if smoke:
        return ["batch_size=8,128", "lr=0.001,0.002", "optimizer=adam", "seed=0,1,2,3,4", "epochs=2"]
    return ["batch_size=8,16,32,64,128", f"lr={LRS}", "optimizer=adam,sgd",
            f"seed={','.join(map(str, range(seeds)))}", "epochs=2"]


def constructed(folder: Path, overrides: list[str]) -> Path:
    """The runs of `python -m harness OVERRIDES -m` as constructed folders with probes, in a fresh process."""
    code = ("import sys; from pathlib import Path; from tests.helpers.sweeps import add_probes, study_sweep; "
            "add_probes(study_sweep(Path(sys.argv[1]), *sys.argv[2:]))")
    subprocess.run([sys.executable, "-c", code, str(folder), *overrides], cwd=doc_blocks.REPO, check=True)
    return folder


def timed(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def sweep_times(runs: int, seeds: int, folder: Path, smoke: bool) -> tuple[float, float, int, float, float]:
    """(the first report, the report again, its HTML's bytes, the results table, the results table without the
    metrics cache): the first report reads every run's files (and keeps the sweep's metrics cache); the report
    again and the results table after it read the cache; the results table without it reads every file again."""
    from harness.store.metrics_cache import CACHE_FILE

    sweep = constructed(folder / "sweeps" / f"runs-{runs}", command(seeds, smoke))
    report = timed(["harness.report", str(sweep), "--out", str(folder / "reports")], folder)
    size = max((folder / "reports").glob(f"runs-{runs}-*.html"), key=lambda p: p.stat().st_mtime).stat().st_size
    again = timed(["harness.report", str(sweep), "--out", str(folder / "reports")], folder)
    results = timed(["harness.results", str(sweep)], folder)
    (sweep / CACHE_FILE).unlink()
    uncached = timed(["harness.results", str(sweep)], folder)
    return report, again, size, results, uncached


def sweep_row(runs: int, facets: int, times: tuple[float, float, int, float, float]) -> str:
    report, again, size, results, uncached = times
    return (f"| {runs:,} runs, {facets} facets | {report:.1f} s | {again:.1f} s | {size / 1e6:.1f} MB | "
            f"{results:.1f} s | {uncached:.1f} s |")


def index_seconds(sweeps: int, folder: Path) -> float:
    """The index over `sweeps` sweeps of the main job's 12 runs (copies of one constructed sweep, each reported)."""
    from harness.report.html import write_report

    root = folder / "index"
    first = constructed(root / "sweeps" / "main-000", ["batch_size=8,32,64,128"])
    for n in range(1, sweeps):
        shutil.copytree(first, root / "sweeps" / f"main-{n:03d}")
    for sweep in sorted((root / "sweeps").iterdir()):
        write_report(sweep, root / "reports")
    return timed(["harness.report", "--index", "--out", str(root / "reports")], root)


def index_row(sweeps: int, seconds: float) -> str:
    return f"| `reports/index.html` over {sweeps} sweeps (12 runs each) | {seconds:.1f} s | – | – | – | – |"


def table(rows: list[str]) -> str:
    return ("| what | report (`python -m harness.report`), first | report again | its HTML | results table "
            "(`python -m harness.results`) after the report | results table, no metrics cache |"
            "\n| --- | ---: | ---: | ---: | ---: | ---: |\n" + "\n".join(rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="20 runs and an index of 3 sweeps")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/performance.md")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [(20, 5)] if args.smoke else [(100, 1), (1000, 10), (10000, 100)]
        for runs, seeds in sizes:
            rows.append(sweep_row(runs, 2 if args.smoke else 20, sweep_times(runs, seeds, Path(tmp), args.smoke)))
            print(rows[-1], file=sys.stderr, flush=True)
        sweeps = 3 if args.smoke else 100
        rows.append(index_row(sweeps, index_seconds(sweeps, Path(tmp))))
    text = table(rows)
    print(text)
    if args.update_docs and not args.smoke:
        doc_blocks.replace_section("report-cost", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
