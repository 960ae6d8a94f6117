"""Keras on TensorFlow against Keras on JAX, inside the harness and in plain Keras, side by side.

    python -m benchmarks.bench_backends                   # medians of 3 runs, 1 of each sweep, backends interleaved
    python -m benchmarks.bench_backends --update-docs   # also rewrite the README's backend tables
    python -m benchmarks.bench_backends --smoke           # one tiny round of runs (no sweeps), to check the script
    python -m benchmarks.bench_backends --keep DIR        # keep the sweeps (main job on each backend) in DIR

Every measurement is a fresh process started from here, one at a time, the backends alternating:
  steps      `python -m harness batch_size=B epochs=E probes=false backend=K` for B in 8, 32, 128: the median
             over epochs 2..E of an epoch's training seconds (metrics: samples_per_second) per step; the first
             epoch's extra (tracing on TensorFlow, compiling on JAX) is epoch 1's training seconds minus that median
             epoch's; the process's whole wall time;
  plain      the same model in plain Keras on the same backend: model.fit(x, y, batch_size, epochs) on numpy
             arrays with Keras's defaults (one step per call), timed per epoch by a callback;
  one run    `python -m harness batch_size=8 backend=K`: the defaults (15 epochs, probes on), whole process;
  sweeps     the main job `python -m harness batch_size=8,32,64,128 backend=K -m` (3 seeds, 12 runs) and the smoke
             study (`+study=smoke`), wall time, and the main job's time by phase (benchmarks.bench_sweep.phases);
  agreement  each batch size's mean final val_acc on each backend with its 95% interval over the 3 seeds, and the
             main job's verdict on each.
The data cache and, for JAX, XLA's cache of compiled programs ($HARNESS_CACHE/jax) are warmed once before
timing, as every run after a user's first finds them.
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

REPO = Path(__file__).resolve().parent.parent
BACKENDS = ("tensorflow", "jax")
MAIN_JOB = ["batch_size=8,32,64,128"]


def child_plain(backend: str, batch_size: int, epochs: int, num_samples: int) -> dict:
    """Plain Keras on `backend`: numpy arrays into model.fit, one epoch's seconds per epoch."""
    os.environ["KERAS_BACKEND"] = backend
    import keras

    from benchmarks.bench_speed import _mnist1d, _seed_cnn

    x, y, _, _ = _mnist1d(num_samples)
    keras.utils.set_random_seed(0)
    model = _seed_cnn()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    seconds: list[float] = []

    class Clock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0, callbacks=[Clock()])
    steps = -(-len(x) // batch_size)
    return {"step_ms": 1000 * statistics.median(seconds[1:]) / steps}


def _timed(command: list[str], cwd: Path, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return seconds, proc


def harness_run(backend: str, batch_size: int, epochs: int, num_samples: int, workdir: Path) -> dict:
    import pandas as pd

    run_dir = workdir / f"run-{backend}-{batch_size}-{time.monotonic_ns()}"
    seconds, _ = _timed([sys.executable, "-m", "harness", f"batch_size={batch_size}", f"epochs={epochs}",
                         "probes=false", f"dataset.num_samples={num_samples}", f"backend={backend}",
                         f"hydra.run.dir={run_dir}"], workdir)
    metrics = pd.read_parquet(run_dir / "metrics.parquet")
    train = metrics["train_size"] / metrics["samples_per_second"]  # each epoch's training seconds
    steps = int(metrics["steps_per_epoch"].iloc[0])
    later = float(train.iloc[1:].median())
    return {"step_ms": 1000 * later / steps, "first_extra": float(train.iloc[0]) - later, "process": seconds}


def plain_run(backend: str, batch_size: int, epochs: int, num_samples: int, workdir: Path) -> dict:
    _, proc = _timed([sys.executable, "-m", "benchmarks.bench_backends", "--child", backend, "--batch-sizes",
                      str(batch_size), "--epochs", str(epochs), "--num-samples", str(num_samples)], REPO)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def default_run(backend: str, workdir: Path) -> float:
    seconds, _ = _timed([sys.executable, "-m", "harness", "batch_size=8", f"backend={backend}",
                         f"hydra.run.dir={workdir / f'default-{backend}-{time.monotonic_ns()}'}"], workdir)
    return seconds


def sweep(backend: str, args: list[str], sweep_dir: Path) -> tuple[float, dict]:
    from benchmarks.bench_sweep import phases

    sweep_dir.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    seconds, _ = _timed([sys.executable, "-m", "harness", *args, f"backend={backend}",
                         f"hydra.sweep.dir={sweep_dir}", "-m"], sweep_dir.parent)
    return seconds, phases(sweep_dir, start, start + seconds, min(2, os.cpu_count() or 1))


def agreement(sweeps: dict[str, Path]) -> list[str]:
    """Rows of the agreement table: per batch size, each backend's mean val_acc ± half its 95% interval, and
    whether each mean lies inside the other backend's interval; then each backend's verdict."""
    from harness.assess import sweep as sweep_files
    from harness.assess.analysis import final_results
    from harness.assess.intervals import t_interval
    from harness.assess.verdicts import batch_size_verdict

    finals = {b: final_results(sweep_files.read(path).epochs) for b, path in sweeps.items()}
    rows = []
    for size in sorted(finals["tensorflow"]["batch_size"].unique()):
        values = {b: finals[b].loc[finals[b]["batch_size"] == size, "val_acc"].to_numpy() for b in BACKENDS}
        means = {b: float(v.mean()) for b, v in values.items()}
        intervals = {b: t_interval(v) if len(v) > 1 else (means[b], means[b]) for b, v in values.items()}
        inside = all(intervals[o][0] <= means[b] <= intervals[o][1] for b, o in (("jax", "tensorflow"),
                                                                                 ("tensorflow", "jax")))
        cells = [f"{means[b]:.3f} ± {(intervals[b][1] - intervals[b][0]) / 2:.3f}" for b in BACKENDS]
        rows.append(f"| {size} | {cells[0]} | {cells[1]} | {'yes' if inside else 'no'} |")
    verdicts = {b: batch_size_verdict(finals[b]).outcome for b in BACKENDS}
    rows.append(f"| verdict | {verdicts['tensorflow']} | {verdicts['jax']} | "
                f"{'same' if verdicts['tensorflow'] == verdicts['jax'] else 'differs'} |")
    return rows


def tables(results: dict, batch_sizes: list[int], epochs: int, repeats: int, sweeps: dict, phases: dict,
           agree: list[str]) -> tuple[str, str]:
    med = {key: statistics.median(values) for key, values in results.items()}
    speed = [
        f"MNIST-1D convnet; {epochs}-epoch runs with probes=false, median of {repeats} fresh processes each; one "
        f"sweep each; {os.cpu_count()} CPU cores, nothing else running; `python -m benchmarks.bench_backends`.",
        "",
        "| measure | TensorFlow | JAX | JAX ÷ TensorFlow |",
        "| --- | ---: | ---: | ---: |",
    ]

    def line(label: str, tf_value: float, jax_value: float, unit: str, digits: int = 2) -> None:
        speed.append(f"| {label} | {tf_value:.{digits}f} {unit} | {jax_value:.{digits}f} {unit} | "
                     f"{jax_value / tf_value:.2f}x |")

    for b in batch_sizes:
        line(f"harness, ms per training step at batch {b}", med[("tensorflow", b, "step_ms")],
             med[("jax", b, "step_ms")], "ms")
        line(f"plain Keras `fit`, ms per step at batch {b}", med[("tensorflow", b, "plain_ms")],
             med[("jax", b, "plain_ms")], "ms")
    line(f"first epoch's extra (tracing / compiling), batch {batch_sizes[0]}",
         med[("tensorflow", batch_sizes[0], "first_extra")], med[("jax", batch_sizes[0], "first_extra")], "s")
    line(f"one {epochs}-epoch run at batch {batch_sizes[0]}, whole process",
         med[("tensorflow", batch_sizes[0], "process")], med[("jax", batch_sizes[0], "process")], "s", 1)
    if ("tensorflow", "default") in med:  # not in a smoke round
        line("one default run (`batch_size=8`: 15 epochs, probes on), whole process", med[("tensorflow", "default")],
             med[("jax", "default")], "s", 1)
    for name in sweeps["tensorflow"]:
        line(f"{name}, wall time", sweeps["tensorflow"][name], sweeps["jax"][name], "s", 1)
    if phases:  # not in a smoke round
        speed += ["", "Where the main job's time goes (seconds; slot-seconds are the runs phase times 2 slots):", "",
                  "| phase | TensorFlow | JAX |", "| --- | ---: | ---: |"]
        speed += [f"| {k} | {phases['tensorflow'][k]:.1f} | {phases['jax'][k]:.1f} |" for k in phases["tensorflow"]]
    agreement_text = "\n".join([
        "The main job on each backend (3 seeds per batch size): mean final val_acc ± half its 95% interval; "
        "\"inside\" when each backend's mean lies in the other's interval.",
        "",
        "| batch | TensorFlow | JAX | inside |",
        "| ---: | :---: | :---: | :---: |",
        *agree,
    ])
    return "\n".join(speed), agreement_text


def main(argv: list[str] | None = None) -> int:
    from benchmarks.bench_speed import run_options

    parser = run_options(__doc__.splitlines()[0], "batch 32, 2 epochs, 600 samples, 1 repeat; no warm-up, default "
                                                  "run or sweeps")
    parser.add_argument("--keep", type=Path, help="keep the sweeps here (main job and study on each backend)")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true", help="rewrite its generated blocks in README.md and docs/")
    parser.add_argument("--child", choices=BACKENDS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.batch_sizes, args.epochs, args.num_samples, args.repeats = "32", 2, 600, 1
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    if args.child:
        print(json.dumps(child_plain(args.child, batch_sizes[0], args.epochs, args.num_samples)))
        return 0
    # smoke: one batch size of tiny data, no default run and no sweeps (the suite checks `agreement` and `sweep`'s
    # phases on the sweeps it builds anyway, tests/e2e/test_benchmarks.py)
    results: dict = {}
    sweeps: dict = {b: {} for b in BACKENDS}
    phases: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        keep = args.keep or workdir / "sweeps"
        for backend in BACKENDS if not args.smoke else ():  # the data cache and XLA's programs, as after a first run
            harness_run(backend, batch_sizes[0], 2, args.num_samples, workdir)
        for repeat in range(args.repeats):
            for b in batch_sizes:
                for backend in BACKENDS:
                    found = harness_run(backend, b, args.epochs, args.num_samples, workdir)
                    found["plain_ms"] = plain_run(backend, b, args.epochs, args.num_samples, workdir)["step_ms"]
                    for key, value in found.items():
                        results.setdefault((backend, b, key), []).append(value)
                    print(f"# repeat {repeat + 1} batch {b} {backend}: {found}", file=sys.stderr, flush=True)
            for backend in BACKENDS if not args.smoke else ():
                results.setdefault((backend, "default"), []).append(default_run(backend, workdir))
        for backend in BACKENDS if not args.smoke else ():
            seconds, phases[backend] = sweep(backend, MAIN_JOB, keep / f"main-{backend}")
            sweeps[backend]["the main job (12 runs)"] = seconds
            study_seconds, _ = sweep(backend, ["+study=smoke"], keep / f"smoke-{backend}")
            sweeps[backend]["`+study=smoke` (2 runs)"] = study_seconds
            print(f"# sweeps {backend}: {sweeps[backend]}", file=sys.stderr, flush=True)
        agree = agreement({b: keep / f"main-{b}" for b in BACKENDS}) if not args.smoke else []
    speed, agreement_text = tables(results, batch_sizes, args.epochs, args.repeats, sweeps, phases, agree)
    print(speed + "\n\n" + agreement_text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("backend-speed", speed)
        replace_section("backend-agreement", agreement_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
