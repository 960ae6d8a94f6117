"""What the recomputed batch-norm statistics cost: the main job's runs with model.batch_norm=true, each trained
with the per-epoch measurement (harness.run.precise_bn) and without it, in the same process.

    python -m benchmarks.bench_precise_bn                 # medians of 3, the two variants interleaved
    python -m benchmarks.bench_precise_bn --update-docs # also rewrite the README's table
    python -m benchmarks.bench_precise_bn --smoke         # one tiny round, to check the script works

Every run of `python -m harness batch_size=8,32,64,128 model.batch_norm=true -m` (one seed, default epochs and
probes) goes through harness.run.experiment.run_experiment twice per repeat, once as it is and once with the measurement
switched off, alternating which goes first, after one unmeasured warm-up run. Two numbers per run: the share of
its wall time spent in the measurement itself (timed around PreciseBatchNorm.columns, in the run that has it),
and the ratio of the two runs' wall times (run.json's run_seconds: set-up to the end, data, probes and files
included; process start-up excluded, which a warm worker pays once). The second also holds the runs' own
variation (a few percent here, the same work timed twice), which the first does not.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

BATCH_SIZES = (8, 32, 64, 128)


def run_seconds(overrides: list[str], run_dir: Path, measured: bool) -> tuple[float, float]:
    """One run in this process, with or without the per-epoch recomputed statistics: its run_seconds, and the
    seconds spent in the measurement."""
    from hydra import compose, initialize_config_dir

    from harness.config.compose import CONF_DIR, to_run_config
    from harness.run import experiment as run
    from harness.run import precise_bn

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = to_run_config(compose("config", overrides=overrides))
    original, columns, spent = run._precise_bn, precise_bn.PreciseBatchNorm.columns, []

    def timed(self, *args):
        started = time.perf_counter()
        try:
            return columns(self, *args)
        finally:
            spent.append(time.perf_counter() - started)

    precise_bn.PreciseBatchNorm.columns = timed
    if not measured:
        run._precise_bn = lambda *args: None
    try:
        run.run_experiment(cfg, run_dir, run_id=f"bench/{run_dir.name}")
    finally:
        run._precise_bn, precise_bn.PreciseBatchNorm.columns = original, columns
    return json.loads((run_dir / "run.json").read_text())["run_seconds"], sum(spent)


def table(with_bn: dict[int, list[float]], without: dict[int, list[float]], spent: dict[int, list[float]],
          repeats: int, smoke: bool = False) -> str:
    """The measured seconds (by batch size) as the docs' table: medians, the measurement's share of a run, and the
    ratio with ÷ without; then the batch sizes together."""
    med = statistics.median
    sizes = list(with_bn)
    total_with, total_without = (sum(med(v[b]) for b in sizes) for v in (with_bn, without))
    rows = [f"| batch {b} | {med(spent[b]):.1%} | {med(without[b]):.2f} s | {med(with_bn[b]):.2f} s | "
            f"{med(with_bn[b]) / med(without[b]):.3f}x |" for b in sizes]
    share = sum(med(spent[b]) * med(with_bn[b]) for b in sizes) / total_with
    return "\n".join([
        f"Median of {repeats}, run_seconds of one run (MNIST-1D convnet with batch norm, default epochs and probes"
        f"{'; smoke round' if smoke else ''}), both variants in one process, one after the other.",
        "",
        "| run | share of the run in the measurement | run without it | run with it | with ÷ without |",
        "| --- | ---: | ---: | ---: | ---: |",
        *rows,
        f"| the main job's {len(sizes)} runs together | {share:.1%} | {total_without:.2f} s | {total_with:.2f} s | "
        f"{total_with / total_without:.3f}x |",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="600 samples, 1 epoch, batch 32 only, no probes, no warm-up, 1 repeat")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true", help="rewrite its generated blocks in README.md and docs/")
    args = parser.parse_args(argv)
    extra = ["dataset.num_samples=600", "epochs=1", "probes=false"] if args.smoke else []
    sizes = (32,) if args.smoke else BATCH_SIZES
    repeats = 1 if args.smoke else args.repeats
    with_bn, without, spent = {b: [] for b in sizes}, {b: [] for b in sizes}, {b: [] for b in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.smoke:  # the process's first run pays TensorFlow's one-off start: not part of either variant
            run_seconds(["model.batch_norm=true", "dataset.num_samples=600", "epochs=1"], Path(tmp) / "warm-up", True)
        for r in range(repeats):
            for batch in sizes:
                overrides = ["model.batch_norm=true", f"batch_size={batch}", "seed=0", *extra]
                for measured in ((True, False) if r % 2 == 0 else (False, True)):
                    seconds, inside = run_seconds(overrides, Path(tmp) / f"{batch}-{r}-{measured}", measured)
                    (with_bn if measured else without)[batch].append(seconds)
                    if measured:
                        spent[batch].append(inside / seconds)
                print(f"# repeat {r + 1}, batch {batch}: {with_bn[batch][-1]:.1f} s with, {without[batch][-1]:.1f} s "
                      "without", file=sys.stderr, flush=True)
    text = table(with_bn, without, spent, repeats, args.smoke)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("precise-bn-cost", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
