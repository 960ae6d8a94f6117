"""The pure-JAX floor: the main job's runs written directly in JAX (jax.numpy and jax.lax, no Keras, no framework),
as a researcher who wanted only the numbers would write them. benchmarks.bench_floor times the harness against it.

It computes what a harness run on JAX computes, so the two can be compared epoch by epoch:
- the data: the harness's MNIST-1D arrays (its cached .npz, the same bytes), training samples in the order a JAX
  run uses (numpy's `default_rng([seed, epoch]).permutation`, harness.data.batches), the last batch of an epoch
  short when the batch does not divide the training set;
- the model: the built-in convnet (conv32-pool-conv64-pool-dense64-softmax, 1-D kernels of 5, 'same' padding),
  from the initial weights a harness run wrote (initial.weights.npz, in the model's weight order);
- the loss: Keras's cross-entropy on softmax probabilities (normalised, clipped to [1e-7, 1 - 1e-7]), the mean
  over the batch; the optimizer: Adam as Keras computes it (lr 0.001, beta_1 0.9, beta_2 0.999, epsilon 1e-7,
  the bias correction folded into the step size);
- after every epoch: the running training loss and accuracy of the epoch, and the training and validation sets
  evaluated in batches of 1,024 (loss and accuracy).

Nothing is written but the returned rows; no probes, no checkpoints. A process compiles its programs once per
batch shape (no persistent cache), as a plain program does.
"""
from __future__ import annotations

import os
import time

import numpy as np

EPSILON = 1e-7  # Keras's backend epsilon: the probabilities' clip and Adam's denominator floor
LEARNING_RATE, BETA_1, BETA_2 = 1e-3, 0.9, 0.999
EVAL_BATCH = 1024


def single_threaded() -> None:
    """XLA on one CPU thread, as the harness gives each of two runs at once on two cores (set before JAX loads)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1".strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _programs():
    """(train_step, evaluate): the jitted programs, built once per process."""
    import jax
    import jax.numpy as jnp

    def forward(params, x):
        k1, b1, k2, b2, k3, b3, k4, b4 = params
        dims = ("NWC", "WIO", "NWC")
        pool = lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 1), (1, 2, 1), "VALID")  # noqa: E731
        h = jax.lax.conv_general_dilated(x, k1, (1,), "SAME", dimension_numbers=dims) + b1
        h = pool(jax.nn.relu(h))
        h = jax.lax.conv_general_dilated(h, k2, (1,), "SAME", dimension_numbers=dims) + b2
        h = pool(jax.nn.relu(h))
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ k3 + b3)
        return jax.nn.softmax(h @ k4 + b4)

    def losses(probabilities, y):
        probabilities = probabilities / jnp.sum(probabilities, -1, keepdims=True)
        probabilities = jnp.clip(probabilities, EPSILON, 1.0 - EPSILON)
        return -jnp.take_along_axis(jnp.log(probabilities), y[:, None], axis=-1)[:, 0]

    def batch_loss(params, x, y):
        probabilities = forward(params, x)
        return jnp.mean(losses(probabilities, y)), probabilities

    def train_step(state, x, y):
        params, m, v, step, loss_sum, hits = state
        (loss, probabilities), grads = jax.value_and_grad(batch_loss, has_aux=True)(params, x, y)
        t = (step + 1).astype(jnp.float32)
        alpha = LEARNING_RATE * jnp.sqrt(1 - BETA_2 ** t) / (1 - BETA_1 ** t)
        m = [mi + (g - mi) * (1 - BETA_1) for mi, g in zip(m, grads)]
        v = [vi + (g * g - vi) * (1 - BETA_2) for vi, g in zip(v, grads)]
        params = [p - (mi * alpha) / (jnp.sqrt(vi) + EPSILON) for p, mi, vi in zip(params, m, v)]
        n = y.shape[0]
        hits = hits + jnp.sum(jnp.argmax(probabilities, -1) == y)
        return params, m, v, step + 1, loss_sum + loss * n, hits

    def evaluate(params, x, y):
        probabilities = forward(params, x)
        return jnp.sum(losses(probabilities, y)), jnp.sum(jnp.argmax(probabilities, -1) == y)

    return jax.jit(train_step, donate_argnums=0), jax.jit(evaluate)


_compiled = None


def train(data: str, weights: list[np.ndarray], batch_size: int, seed: int, epochs: int) -> list[dict]:
    """One run: per-epoch rows (epoch, train_loss, train_acc, train_seconds, train_eval_loss, train_eval_acc,
    val_loss, val_acc, epoch_seconds) of the convnet trained from `weights` on the MNIST-1D arrays in the .npz
    file `data`."""
    import jax.numpy as jnp

    global _compiled
    if _compiled is None:
        _compiled = _programs()
    train_step, evaluate = _compiled
    with np.load(data, allow_pickle=False) as arrays:
        x, y = arrays["x"].astype(np.float32)[..., None], arrays["y"].astype(np.int32)
        x_val, y_val = arrays["x_test"].astype(np.float32)[..., None], arrays["y_test"].astype(np.int32)
    params = [jnp.asarray(w) for w in weights]
    state = (params, [jnp.zeros_like(p) for p in params], [jnp.zeros_like(p) for p in params], jnp.int32(0),
             jnp.float32(0), jnp.int32(0))
    evaluated = {name: [(jnp.asarray(a[i:i + EVAL_BATCH]), jnp.asarray(b[i:i + EVAL_BATCH]))
                        for i in range(0, len(b), EVAL_BATCH)] for name, a, b in (("train_eval", x, y),
                                                                                   ("val", x_val, y_val))}
    rows = []
    for epoch in range(epochs):
        started = time.perf_counter()
        state = (*state[:4], jnp.float32(0), jnp.int32(0))
        order = np.random.default_rng([seed, epoch]).permutation(len(y))
        for start in range(0, len(order), batch_size):
            chosen = order[start:start + batch_size]
            state = train_step(state, x[chosen], y[chosen])
        row = {"epoch": epoch + 1, "train_loss": float(state[4]) / len(y), "train_acc": int(state[5]) / len(y),
               "train_seconds": time.perf_counter() - started}
        for name, batches in evaluated.items():
            sums = [evaluate(state[0], xb, yb) for xb, yb in batches]
            total = sum(len(yb) for _, yb in batches)
            row[f"{name}_loss"] = sum(float(s[0]) for s in sums) / total
            row[f"{name}_acc"] = sum(int(s[1]) for s in sums) / total
        row["epoch_seconds"] = time.perf_counter() - started
        rows.append(row)
    return rows


def _worker_start() -> float:
    """In a worker process, before JAX loads: one thread; returns the seconds JAX took to import."""
    single_threaded()
    started = time.perf_counter()
    import jax  # noqa: F401

    return time.perf_counter() - started


def _task(task: dict, data: str, epochs: int) -> dict:
    global _import_seconds
    started = time.time()  # the run's span includes its worker's JAX import, as a harness run's does
    first = _import_seconds is None
    if first:
        _import_seconds = _worker_start()
    with np.load(task["weights"], allow_pickle=False) as saved:
        weights = [saved[f"weight_{i}"] for i in range(len(saved["trainable"]))]
    rows = train(data, weights, task["batch_size"], task["seed"], epochs)
    return {**task, "rows": rows, "pid": os.getpid(), "started": started, "ended": time.time(),
            "import_seconds": _import_seconds if first else 0.0}


_import_seconds: float | None = None


def main(argv: list[str] | None = None) -> int:
    """python -m benchmarks.pure_jax_floor TASKS.json --data NPZ --epochs 15 --jobs 2 --out RESULT.json: the
    tasks (batch_size, seed, weights: an initial.weights.npz) run `--jobs` at a time in as many processes."""
    import argparse
    import json
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", help="a JSON list of {batch_size, seed, weights}")
    parser.add_argument("--data", required=True, help="the MNIST-1D .npz the harness cached")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.tasks) as f:
        tasks = json.load(f)
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
        done = list(pool.map(_task, tasks, [args.data] * len(tasks), [args.epochs] * len(tasks)))
    with open(args.out, "w") as f:
        json.dump(done, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
