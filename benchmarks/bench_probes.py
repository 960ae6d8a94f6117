"""What the probes cost: the main job with its default probes against the same job with probes=false.

    python -m benchmarks.bench_probes                 # medians of 3, the two variants interleaved
    python -m benchmarks.bench_probes --update-docs # also rewrite the README's probes table
    python -m benchmarks.bench_probes --smoke         # one tiny round, to check the script works

Both variants run `python -m harness batch_size=8,32,64,128 seed=0 -m` (one seed) in a fresh process tree (start-ups, the sweep's
interpolation process and the report included). Where the probes' time goes: the end-of-run probes' own clock
(probes.json: seconds), and the interpolation command timed alone on the finished sweep.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_sweep import REPO, sweep

MAIN_JOB = ["batch_size=8,32,64,128", "seed=0"]  # one seed: the cost per run, as measured before the 3-seed default


def timed_interpolation(sweep_dir: Path) -> float:
    (sweep_dir / "interpolation.parquet").unlink()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness.probe", str(sweep_dir)], check=True, capture_output=True,
                   cwd=REPO)
    return time.perf_counter() - start


def table(on: list[float], off: list[float], final_probes: list[float], interpolation: list[float], repeats: int,
          extra: list[str]) -> str:
    """The measured seconds as the docs' table: medians, and the ratio of the medians."""
    med = statistics.median
    return "\n".join([
        f"Median of {repeats} (MNIST-1D convnet, default epochs and probe_samples unless smoke"
        f"{'; ' + ' '.join(extra) if extra else ''}).",
        "",
        "| measure | value |",
        "| --- | ---: |",
        f"| main job with `probes=false`, wall time | {med(off):.1f} s |",
        f"| main job with the default probes, wall time | {med(on):.1f} s |",
        f"| ratio, probes on ÷ off | {med(on) / med(off):.2f}x |",
        f"| end-of-run probes of one run (eigenvalue, trace, sharpness at two ε) | {med(final_probes):.1f} s |",
        f"| the sweep's interpolation (`python -m harness.probe`), alone | {med(interpolation):.1f} s |",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="600 samples, 1 epoch, batch 16 and 64 in one worker, 64 probe samples, 1 repeat")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true", help="rewrite its generated blocks in README.md and docs/")
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for both variants")
    args = parser.parse_args(argv)
    # smoke: two batch sizes (one pair for the interpolation) of tiny data, to check the script, not to measure
    extra = (["dataset.num_samples=600", "epochs=1", "batch_size=16,64", "hydra.launcher.n_jobs=1", "probe_samples=64"]
             if args.smoke else [])
    extra += args.extra
    repeats = 1 if args.smoke else args.repeats
    on, off, final_probes, interpolation = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            seconds, _ = sweep([*MAIN_JOB, "probes=false", *extra], Path(tmp) / f"off-{r}")
            off.append(seconds)
            seconds, _ = sweep([*MAIN_JOB, *extra], Path(tmp) / f"on-{r}")
            on.append(seconds)
            final_probes += [json.loads(p.read_text())["seconds"] for p in (Path(tmp) / f"on-{r}").glob("*/probes.json")]
            interpolation.append(timed_interpolation(Path(tmp) / f"on-{r}"))
            print(f"# repeat {r + 1}: probes=false {off[-1]:.1f} s, probes on {on[-1]:.1f} s", file=sys.stderr,
                  flush=True)
    text = table(on, off, final_probes, interpolation, repeats, args.extra)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("probe-cost", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
