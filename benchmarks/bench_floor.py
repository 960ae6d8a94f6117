"""The main job against the pure-JAX floor: the same runs written directly in JAX (benchmarks.pure_jax_floor), timed
beside the harness in one invocation, rounds interleaved, and where the harness's extra time goes.

    python -m benchmarks.bench_floor                  # 3 rounds (about 15 minutes on 2 cores)
    python -m benchmarks.bench_floor --update-docs    # also rewrite docs/performance.md's pure-jax-floor block
    python -m benchmarks.bench_floor --smoke          # one round of 2 tiny runs, to check the script works

First, once and untimed, the harness on JAX with its defaults: its runs write the initial weights the floor starts
from (initial.weights.npz) and the per-epoch val_acc the floor must agree with (within VAL_ACC_TOLERANCE at every
epoch, else the benchmark stops: the two would not be the same computation). Then each round runs, in turn:

  harness, JAX, probes=false, cold cache   $HARNESS_CACHE/jax emptied first (the compiled-program cache only)
  harness, JAX, probes=false               the cache as the runs before left it
  pure-JAX floor                           python -m benchmarks.pure_jax_floor, 2 processes at once
  harness, JAX, default probes
  harness, TensorFlow, probes=false
  harness, TensorFlow, default probes      the main job as `python -m harness batch_size=8,32,64,128 -m` runs it

Every harness variant is the command itself, `python -m harness batch_size=8,32,64,128 ... -m`, in a fresh
process, timed from its start to its end (report included), with HARNESS_CACHE in a temporary folder holding a
copy of the cached MNIST-1D. The JAX runs' val_acc must equal the untimed first sweep's at every epoch (with and
without probes: the probes do not change training). TensorFlow's batch order differs from JAX's (tf.random
against numpy), so its runs are only timed.

Where the time goes comes from each sweep's own files: run.json's `timings` and metrics.parquet's per-epoch
seconds, summed over the runs (slot-seconds: two runs at once), and the command's own clock around them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
MAIN_JOB = ["batch_size=8,32,64,128"]
SMOKE_JOB = ["batch_size=16,32", "seed=0", "epochs=2", "dataset.num_samples=600"]
VAL_ACC_TOLERANCE = 0.01  # the floor's val_acc against the JAX harness's, at every epoch
FLOOR = "pure-JAX floor"
JAX_COLD, JAX_OFF, JAX_ON = ("harness, JAX, probes=false, cold cache", "harness, JAX, probes=false",
                             "harness, JAX, default probes")
TF_OFF, TF_ON = "harness, TensorFlow, probes=false", "harness, TensorFlow, default probes"
VARIANTS = {  # name: the command's extra overrides (None: the floor)
    JAX_COLD: ["backend=jax", "probes=false"],
    JAX_OFF: ["backend=jax", "probes=false"],
    FLOOR: None,
    JAX_ON: ["backend=jax"],
    TF_OFF: ["probes=false"],
    TF_ON: [],
}
PROBES_OFF = {JAX_ON: JAX_OFF, TF_ON: TF_OFF}  # a variant with probes: the same without
PHASES = ("before the first run (start-up, planning)", "backend import", "first epoch's extra (compiling)",
          "training (later epochs' pace)", "evaluation after each epoch", "per-epoch probes", "end-of-run probes",
          "set-up and files in the runs", "between runs, idle slots", "after the last run (interpolation, report)")
PRODUCTS = "Hessian-vector products a run"  # beside the phases: the median of the runs' probes.json


def harness(job: list[str], overrides: list[str], folder: Path, cache: Path) -> float:
    """The harness's command in a fresh process; its wall time."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", *job, *overrides, f"hydra.sweep.dir={folder}", "-m"],
                          capture_output=True, text=True, cwd=folder.parent,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HARNESS_CACHE": str(cache)})
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"harness {' '.join(overrides)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds


def floor(tasks: list[dict], data: Path, epochs: int, folder: Path) -> tuple[float, list[dict]]:
    """The pure-JAX program in a fresh process; (its wall time, its runs)."""
    folder.mkdir(parents=True)
    (folder / "tasks.json").write_text(json.dumps(tasks))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmarks.pure_jax_floor", str(folder / "tasks.json"),
                           "--data", str(data), "--epochs", str(epochs), "--jobs", "2",
                           "--out", str(folder / "runs.json")],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the floor exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, json.loads((folder / "runs.json").read_text())


def runs_of(sweep: Path) -> list[dict]:
    """A harness sweep's runs in job order: run.json with its metrics rows."""
    found = []
    for run in sorted((p for p in sweep.iterdir() if (p / "run.json").exists()), key=lambda p: int(p.name)):
        record = json.loads((run / "run.json").read_text())
        record["rows"] = pd.read_parquet(run / "metrics.parquet").to_dict("records")
        record["folder"] = str(run)
        found.append(record)
    return found


def tasks_of(reference: list[dict]) -> list[dict]:
    """The floor's tasks: each JAX run's batch size, seed and initial weights, in job order."""
    return [{"batch_size": r["config"]["batch_size"], "seed": r["config"]["seed"],
             "weights": str(Path(r["folder"]) / "initial.weights.npz")} for r in reference]


def check_agreement(reference: list[dict], floor_runs: list[dict] | None = None,
                    harness_runs: list[dict] | None = None) -> float:
    """The largest val_acc difference from the reference sweep's, at any epoch of any run: the floor's within
    VAL_ACC_TOLERANCE, another JAX sweep's exactly equal; raises AssertionError otherwise."""
    worst = 0.0
    for ref, other in zip(reference, floor_runs or harness_runs or []):
        if floor_runs is not None:
            assert (other["batch_size"], other["seed"]) == (ref["config"]["batch_size"], ref["config"]["seed"])
        mine, theirs = [r["val_acc"] for r in ref["rows"]], [r["val_acc"] for r in other["rows"]]
        assert len(mine) == len(theirs), f"{ref['run_id']}: {len(mine)} epochs against {len(theirs)}"
        gap = max(abs(a - b) for a, b in zip(mine, theirs))
        if floor_runs is not None:
            assert gap <= VAL_ACC_TOLERANCE, (f"{ref['run_id']}: the floor's val_acc is {gap:.4f} from the harness's "
                                              f"(allowed {VAL_ACC_TOLERANCE}): {theirs} against {mine}")
        else:
            assert mine == theirs, f"{ref['run_id']}: val_acc {theirs} against the reference's {mine}"
        worst = max(worst, gap)
    return worst


def _first_extra(values: list[float]) -> float:
    return max(0.0, values[0] - statistics.median(values[1:])) if len(values) > 1 else 0.0


def harness_phases(sweep: Path, started: float, seconds: float, slots: int = 2) -> dict[str, float]:
    """Seconds by phase of a finished harness sweep (slot-seconds within the runs), from its own files."""
    runs = runs_of(sweep)
    first = min(r["timings"]["start"] for r in runs)
    last = max(r["timings"]["end"] for r in runs)
    sums = dict.fromkeys(PHASES, 0.0)
    sums[PHASES[0]] = first - started
    sums[PHASES[-1]] = started + seconds - last
    for run in runs:
        t, rows = run["timings"], run["rows"]
        train = [r["train_size"] / r["samples_per_second"] for r in rows]
        epoch = [r["epoch_seconds"] for r in rows]
        extra, train_extra = _first_extra(epoch), _first_extra(train)
        in_run = {
            "backend import": t["import"],
            "first epoch's extra (compiling)": extra,
            "training (later epochs' pace)": t["training"] - train_extra,
            "evaluation after each epoch": t["evaluation"] - (extra - train_extra),
            "per-epoch probes": t.get("epoch_probes", 0.0),
            "end-of-run probes": t.get("end_probes", 0.0),
        }
        for name, value in in_run.items():
            sums[name] += value
        sums["set-up and files in the runs"] += (t["end"] - t["start"]) - sum(in_run.values())
    sums["between runs, idle slots"] = (last - first) * slots - sum(
        r["timings"]["end"] - r["timings"]["start"] for r in runs)
    products = [json.loads(path.read_text()).get("hessian_products") for path in sweep.glob("*/probes.json")]
    if any(p is not None for p in products):
        sums[PRODUCTS] = statistics.median(p for p in products if p is not None)
    return sums


def floor_phases(runs: list[dict], started: float, seconds: float, slots: int = 2) -> dict[str, float]:
    """The same phases for the floor, from its runs' own clocks (a worker's JAX import in its first run's span)."""
    first, last = min(r["started"] for r in runs), max(r["ended"] for r in runs)
    sums = dict.fromkeys(PHASES, 0.0)
    sums[PHASES[0]] = first - started
    sums[PHASES[-1]] = started + seconds - last
    for run in runs:
        rows = run["rows"]
        train, epoch = [r["train_seconds"] for r in rows], [r["epoch_seconds"] for r in rows]
        extra, train_extra = _first_extra(epoch), _first_extra(train)
        in_run = {"backend import": run["import_seconds"], "first epoch's extra (compiling)": extra,
                  "training (later epochs' pace)": sum(train) - train_extra,
                  "evaluation after each epoch": sum(epoch) - sum(train) - (extra - train_extra)}
        for name, value in in_run.items():
            sums[name] += value
        sums["set-up and files in the runs"] += (run["ended"] - run["started"]) - sum(in_run.values())
    sums["between runs, idle slots"] = (last - first) * slots - sum(r["ended"] - r["started"] for r in runs)
    return sums


def table(walls: dict[str, list[float]], phases: dict[str, list[dict]], runs: int, epochs: int, worst: float,
          smoke: bool) -> str:
    med = statistics.median
    base = med(walls[FLOOR])
    names = list(walls)
    rounds = len(walls[FLOOR])
    lines = [
        f"The main job ({runs} runs of {epochs} epochs, MNIST-1D convnet, 2 at once on {os.cpu_count()} CPU cores), "
        f"median of {rounds} round{'s' if rounds > 1 else ''}, the variants in turn in each round, nothing else "
        f"running{'; smoke: tiny data, not a measurement' if smoke else ''}. The floor's val_acc was within "
        f"{worst:.4f} of the JAX harness's at every epoch of every run (allowed: {VAL_ACC_TOLERANCE}).",
        "",
        "| | " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * len(names),
        "| wall time, median | " + " | ".join(f"{med(walls[n]):.1f} s" for n in names) + " |",
        "| fastest–slowest | " + " | ".join(f"{min(walls[n]):.1f}–{max(walls[n]):.1f} s" for n in names) + " |",
        "| ÷ the floor (medians) | " + " | ".join(f"{med(walls[n]) / base:.2f}x" for n in names) + " |",
        "| ÷ probes=false, same backend | " + " | ".join(
            f"{med(walls[n]) / med(walls[PROBES_OFF[n]]):.2f}x" if n in PROBES_OFF else "–" for n in names) + " |",
        "",
        "Where the time goes (seconds, medians of the rounds; within the runs, summed over them: two run at once):",
        "",
        "| phase | " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * len(names),
    ]
    for phase in PHASES:
        values = [med(p[phase] for p in phases[n]) for n in names]
        lines.append(f"| {phase} | " + " | ".join(f"{v:.1f}" if abs(v) >= 0.05 else "–" for v in values) + " |")
    return "\n".join([*lines, "", *(f"- {probes_share(walls, phases, on)}" for on in PROBES_OFF)])


def probes_share(walls: dict[str, list[float]], phases: dict[str, list[dict]], on: str, slots: int = 2) -> str:
    """What the probes add to `on`'s job, from its phases (medians), against the same job without them."""
    med = statistics.median
    off = PROBES_OFF[on]
    end = med(p["end-of-run probes"] for p in phases[on])
    after = med(p[PHASES[-1]] for p in phases[on]) - med(p[PHASES[-1]] for p in phases[off])
    share = end / slots / med(walls[off])
    counted = [p[PRODUCTS] for p in phases[on] if PRODUCTS in p]
    what = f" ({med(counted):.0f} Hessian-vector products a run and the two sharpness searches)" if counted else ""
    return (f"{on}: the end-of-run probes{what} alone are {end:.1f} slot-seconds, {end / slots:.1f} s of wall time "
            f"with {slots} runs at once, {share:.0%} of the job without probes ({med(walls[off]):.1f} s); the per-epoch "
            f"probes {med(p['per-epoch probes'] for p in phases[on]):.1f} slot-seconds, and {after:+.1f} s after the "
            f"last run (the interpolation, the report's probe figures).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one round of two tiny runs: checks the script")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite docs/performance.md's pure-jax-floor block")
    args = parser.parse_args(argv)
    job = SMOKE_JOB if args.smoke else MAIN_JOB
    rounds = 1 if args.smoke else args.rounds
    from harness.data.builtin import cache_dir, mnist1d_file

    size = 600 if args.smoke else 5000
    data = mnist1d_file(size, 0.8, 42)
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    phases: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        cache.mkdir()
        if not data.exists():
            harness(job, ["epochs=1", "probes=false", "seed=0", "batch_size=32"], tmp / "make-data", cache_dir())
        shutil.copy(data, cache / data.name)
        harness(job, ["backend=jax"], tmp / "reference", cache)  # untimed: initial weights, val_acc to agree with
        reference = runs_of(tmp / "reference")
        tasks, epochs = tasks_of(reference), len(reference[0]["rows"])
        worst = 0.0
        for r in range(rounds):
            for name, overrides in VARIANTS.items():
                folder = tmp / f"round{r}-{list(VARIANTS).index(name)}"
                started = time.time()
                if overrides is None:
                    seconds, done = floor(tasks, cache / data.name, epochs, folder)
                    worst = max(worst, check_agreement(reference, floor_runs=done))
                    phases[name].append(floor_phases(done, started, seconds))
                else:
                    if name == JAX_COLD:
                        shutil.rmtree(cache / "jax", ignore_errors=True)
                    seconds = harness(job, overrides, folder, cache)
                    if "backend=jax" in overrides:
                        check_agreement(reference, harness_runs=runs_of(folder))
                    phases[name].append(harness_phases(folder, started, seconds))
                walls[name].append(seconds)
                print(f"# round {r + 1}: {name} {seconds:.1f} s", file=sys.stderr, flush=True)
    text = table(walls, phases, len(tasks), epochs, worst, args.smoke)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("pure-jax-floor", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
