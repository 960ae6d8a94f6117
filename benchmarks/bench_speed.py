"""Training speed of the harness against a plain-Keras baseline and a minimal tf.function loop
(not benchmarks.bench_floor's pure-JAX floor, which times whole sweeps).

    python -m benchmarks.bench_speed                   # batch 8, 32, 128; 5 epochs; medians of 3 runs
    python -m benchmarks.bench_speed --update-docs   # also rewrite the README's Performance table
    python -m benchmarks.bench_speed --smoke           # one tiny round, to check the script works
    python -m benchmarks.bench_speed --batch-sizes 8 --probes --update-docs   # the harness as it runs by default

Every measurement is a fresh process started from here (same process tree, same machine, one at a time):
  baseline  the seed articles' way: MNIST-1D from mnist1d.make_dataset as numpy arrays, a Sequential CNN,
            model.fit(x, y, batch_size, epochs, validation_data) with Keras defaults;
  harness   `python -m harness batch_size=B epochs=E probes=false` (validation, post-epoch train accuracy,
            metrics files, TensorBoard events and checkpoints included; its data cache warmed once before
            timing; what the probes add to a sweep is benchmarks/bench_probes.py's to measure); with --probes,
            the harness's default probes on (per-epoch noise scale and distance, end-of-run curvature and
            sharpness: one run as a user gets it by default);
  tf.function loop   the same model trained by one tf.function per epoch looping over pre-batched tensors, plus a
            validation pass per epoch, with the harness's thread setting (one intra-op thread for MNIST-1D):
            the per-step overhead a Python framework cannot go below.
Training time is model.fit's wall time (the loop's); process time is the child's whole wall time,
imports and data included. Ratios are of medians.
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


def _mnist1d(num_samples: int):
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = num_samples
    data = make_dataset(args)
    return (data["x"][..., None].astype("float32"), data["y"].astype("int64"),
            data["x_test"][..., None].astype("float32"), data["y_test"].astype("int64"))


def _seed_cnn():
    import keras
    from keras import layers

    return keras.Sequential([
        keras.Input((40, 1)),
        layers.Conv1D(32, 5, padding="same", activation="relu"), layers.MaxPooling1D(2),
        layers.Conv1D(64, 5, padding="same", activation="relu"), layers.MaxPooling1D(2),
        layers.Flatten(), layers.Dense(64, activation="relu"), layers.Dense(10, activation="softmax"),
    ])


def child_baseline(batch_size: int, epochs: int, num_samples: int) -> dict:
    import keras

    x, y, x_val, y_val = _mnist1d(num_samples)
    keras.utils.set_random_seed(0)
    model = _seed_cnn()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    start = time.perf_counter()
    history = model.fit(x, y, batch_size=batch_size, epochs=epochs, validation_data=(x_val, y_val), verbose=0)
    return {"train_seconds": time.perf_counter() - start, "val_acc": history.history["val_accuracy"][-1]}


def child_tf_loop(batch_size: int, epochs: int, num_samples: int) -> dict:
    import keras
    import tensorflow as tf

    from harness.config.schema import DataConfig
    from harness.data import registry as data

    # the harness's thread setting for inputs this small, so the loop is the better of the two
    tf.config.threading.set_intra_op_parallelism_threads(1)
    arrays = data.load(DataConfig("mnist1d", num_samples, 0.8, 42))
    keras.utils.set_random_seed(0)
    model = _seed_cnn()
    optimizer = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    train = tf.data.Dataset.from_tensor_slices((arrays.x_train, arrays.y_train)).shuffle(
        len(arrays.x_train), seed=0).batch(batch_size)
    val = tf.data.Dataset.from_tensor_slices((arrays.x_val, arrays.y_val)).batch(1024)

    @tf.function
    def train_epoch(dataset):
        for x, y in dataset:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

    @tf.function
    def val_accuracy(dataset):
        correct = tf.constant(0, tf.int64)
        for x, y in dataset:
            correct += tf.reduce_sum(tf.cast(tf.argmax(model(x, training=False), axis=1) == y, tf.int64))
        return correct

    start = time.perf_counter()
    for _ in range(epochs):
        train_epoch(train)
        correct = val_accuracy(val)
    return {"train_seconds": time.perf_counter() - start, "val_acc": float(correct) / len(arrays.x_val)}


def _timed(command: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=REPO)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return seconds, proc


def measure(kind: str, batch_size: int, epochs: int, num_samples: int, workdir: Path, probes: bool = False) -> dict:
    """One fresh process of `kind`; returns its training and whole-process seconds."""
    if kind == "harness":
        run_dir = workdir / f"harness-{batch_size}-{time.monotonic_ns()}"
        seconds, _ = _timed([sys.executable, "-m", "harness", f"batch_size={batch_size}", f"epochs={epochs}",
                             f"probes={str(probes).lower()}", f"dataset.num_samples={num_samples}",
                             f"hydra.run.dir={run_dir}"])
        record = json.loads((run_dir / "run.json").read_text())
        import pandas as pd

        val_acc = float(pd.read_parquet(run_dir / "metrics.parquet")["val_acc"].iloc[-1])
        return {"train_seconds": record["fit_seconds"], "process_seconds": seconds, "val_acc": val_acc}
    seconds, proc = _timed([sys.executable, __file__, "--child", kind, "--batch-sizes", str(batch_size),
                            "--epochs", str(epochs), "--num-samples", str(num_samples)])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**result, "process_seconds": seconds}


def table(results: dict, batch_sizes: list[int], epochs: int, repeats: int, probes: bool = False) -> str:
    med = {key: statistics.median(values) for key, values in results.items()}
    lines = [
        f"MNIST-1D convnet, {epochs} epochs, median of {repeats} fresh processes each "
        f"({os.cpu_count()} CPU cores; baseline with TensorFlow's default threads, harness and tf.function loop with "
        f"one intra-op thread; the harness with {'its default probes on' if probes else 'probes=false'}).",
        "",
        "| batch | training s: baseline / harness / tf.function loop | harness ÷ baseline | harness ÷ loop "
        "| process s: baseline / harness | harness ÷ baseline |",
        "| ---: | :---: | ---: | ---: | :---: | ---: |",
    ]
    for b in batch_sizes:
        tb, th, tf_ = (med[(k, b, "train_seconds")] for k in ("baseline", "harness", "tf_loop"))
        pb, ph = (med[(k, b, "process_seconds")] for k in ("baseline", "harness"))
        lines.append(f"| {b} | {tb:.2f} / {th:.2f} / {tf_:.2f} | {th / tb:.2f} | {th / tf_:.2f} "
                     f"| {pb:.1f} / {ph:.1f} | {ph / pb:.2f} |")
    return "\n".join(lines)


def run_options(description: str, smoke: str) -> argparse.ArgumentParser:
    """The options of a benchmark of single runs: batch sizes, epochs, repeats, data size and a smoke round."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--batch-sizes", default="8,32,128")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-samples", type=int, default=5000)
    parser.add_argument("--smoke", action="store_true", help=smoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = run_options(__doc__.splitlines()[0], "batch 32, 1 epoch, 600 samples, 1 repeat")
    parser.add_argument("--probes", action="store_true", help="the harness with its default probes on")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true", help="rewrite its generated blocks in README.md and docs/")
    parser.add_argument("--child", choices=["baseline", "tf_loop"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.batch_sizes, args.epochs, args.num_samples, args.repeats = "32", 1, 600, 1
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    if args.child:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        child = child_baseline if args.child == "baseline" else child_tf_loop
        print(json.dumps(child(batch_sizes[0], args.epochs, args.num_samples)))
        return 0

    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if not args.smoke:  # a smoke round checks the script, it measures nothing
            measure("harness", batch_sizes[0], 1, args.num_samples, workdir)  # warms the data cache
        for repeat in range(args.repeats):
            for b in batch_sizes:
                for kind in ("baseline", "harness", "tf_loop"):
                    result = measure(kind, b, args.epochs, args.num_samples, workdir, args.probes)
                    for key, value in result.items():
                        results.setdefault((kind, b, key), []).append(value)
                    print(f"# repeat {repeat + 1} batch {b} {kind}: train {result['train_seconds']:.2f} s, "
                          f"process {result['process_seconds']:.1f} s, val_acc {result['val_acc']:.3f}",
                          file=sys.stderr, flush=True)
    text = table(results, batch_sizes, args.epochs, args.repeats, args.probes)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("performance-with-probes" if args.probes else "performance", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
