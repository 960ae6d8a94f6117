"""What a batch schedule costs beyond its phases: a ramp run's fit against its phases run as fixed batches, in the
same process.

    python -m benchmarks.bench_ramp                  # medians of 3, the variants interleaved
    python -m benchmarks.bench_ramp --update-docs    # also rewrite docs/performance.md's table
    python -m benchmarks.bench_ramp --smoke          # one tiny round, to check the script works

The ramp `batch_schedule=[[0,32],[2,128],[4,512]] epochs=6` (MNIST-1D convnet, probes off) trains one Keras fit
per phase on one model (harness.run.phases); each of its phases alone is a fixed-batch run of 2 epochs (batch_size=32,
128, 512). Each goes through harness.run.experiment.run_experiment, after one unmeasured warm-up run, in an order
that alternates between repeats. The time compared is run.json's fit_seconds (every phase's fit with its per-epoch
measurements; the set-up, data and files are outside it), the ramp's against the sum of its phases'; and the
train functions each run built (Keras's make_train_function while none was built): one per phase.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

PHASES = ((0, 32), (2, 128), (4, 512))
EPOCHS = 6


def run(overrides: list[str], run_dir: Path) -> tuple[float, int]:
    """One run in this process: its fit_seconds and the train functions Keras built for it."""
    from hydra import compose, initialize_config_dir

    from harness.backend import keras
    from harness.config.compose import CONF_DIR, to_run_config
    from harness.run.experiment import run_experiment

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = to_run_config(compose("config", overrides=overrides))
    original, built = keras.Model.make_train_function, []

    def counted(self, force=False):
        if self.train_function is None or force:
            built.append(1)
        return original(self, force)

    keras.Model.make_train_function = counted
    try:
        run_experiment(cfg, run_dir, run_id=f"bench/{run_dir.name}")
    finally:
        keras.Model.make_train_function = original
    return json.loads((run_dir / "run.json").read_text())["fit_seconds"], len(built)


def variants(phases=PHASES, epochs: int = EPOCHS) -> dict[str, list[str]]:
    """The ramp and each of its phases as a fixed batch, as overrides."""
    schedule = ",".join(f"[{start},{batch}]" for start, batch in phases)
    found = {"ramp": [f"batch_schedule=[{schedule}]", f"epochs={epochs}"]}
    ends = [start for start, _ in phases[1:]] + [epochs]
    for (start, batch), end in zip(phases, ends):
        found[f"batch {batch} alone, {end - start} epochs"] = [f"batch_size={batch}", f"epochs={end - start}"]
    return found


def table(seconds: dict[str, list[float]], built: dict[str, int], repeats: int, smoke: bool = False) -> str:
    """The measured fit seconds (by variant) as the docs' table: medians, and the ramp's ÷ the sum of its phases'."""
    med = statistics.median
    phases = [name for name in seconds if name != "ramp"]
    total = sum(med(seconds[name]) for name in phases)
    rows = [f"| {name} | {med(seconds[name]):.2f} s | {built[name]} |" for name in phases]
    return "\n".join([
        f"Median of {repeats}, fit_seconds of one run (MNIST-1D convnet, probes off"
        f"{'; smoke round' if smoke else ''}), every variant in one process, in turn.",
        "",
        "| run | fit | train functions built |",
        "| --- | ---: | ---: |",
        *rows,
        f"| the phases together | {total:.2f} s | {sum(built[name] for name in phases)} |",
        f"| the ramp, one fit per phase | {med(seconds['ramp']):.2f} s | {built['ramp']} |",
        f"| ramp ÷ its phases | {med(seconds['ramp']) / total:.3f}x | |",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="600 samples, a 2-epoch ramp, no warm-up, 1 repeat")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/performance.md")
    args = parser.parse_args(argv)
    common = ["probes=false", "seed=0"] + (["dataset.num_samples=600"] if args.smoke else [])
    found = variants(((0, 32), (1, 128)), 2) if args.smoke else variants()
    repeats = 1 if args.smoke else args.repeats
    seconds: dict[str, list[float]] = {name: [] for name in found}
    built: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.smoke:  # the process's first run pays TensorFlow's one-off start: no variant's
            run(["dataset.num_samples=600", "epochs=1", "probes=false"], Path(tmp) / "warm-up")
        for r in range(repeats):
            order = list(found) if r % 2 == 0 else list(reversed(found))
            for name in order:
                fit, built[name] = run([*common, *found[name]], Path(tmp) / f"{name.replace(' ', '-')}-{r}")
                seconds[name].append(fit)
                print(f"# repeat {r + 1}, {name}: {fit:.2f} s", file=sys.stderr, flush=True)
    text = table(seconds, built, repeats, args.smoke)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("ramp-cost", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
