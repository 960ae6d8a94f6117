"""Many small runs on one GPU: the main job at `hydra.launcher.runs_per_gpu` K against K = 1 (docs/sweeps.md).

    python -m benchmarks.bench_gpu_share --out DIR                  # a JAX GPU machine: seed=0, K = 1 and 4, 2 rounds
    python -m benchmarks.bench_gpu_share --out DIR --seeds 0,1,2 --k 1 4 12 --repeats 1   # the 12-run main job
    python -m benchmarks.bench_gpu_share --from DIR --update-docs   # any machine: the table of DIR's measurements
    python -m benchmarks.bench_gpu_share --smoke                    # CPU, 1 epoch: checks the script, measures nothing

`scripts/gpu_smoke.sh share WHEELS [OPTIONS]` installs what a CUDA machine without TensorFlow lacks and runs this.
Each sweep is `python -m harness batch_size=8,32,64,128 seed=S backend=jax gpus=1 probes=false
hydra.launcher.runs_per_gpu=K -m`, a fresh command, one at a time; the K values alternate within each round, so
that a drift of the machine falls on all of them. One untimed sweep first fills XLA's cache of compiled programs
and the data cache, as every run after a user's first finds them. Per sweep: the runs' wall time (first run's
start to last run's end, from run.json), the command's (start-up and report included), each batch size's median
samples/s over epochs 2.., and the GPU's utilisation (the mean of nvidia-smi's samples every 0.25 s while the
command ran) and peak memory in use. The table gives the median over rounds and each K's runs' wall time as a
ratio of K = 1's, measured in the same process tree. DIR/results.json keeps every sweep; DIR/SWEEP/ its runs.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import doc_blocks

REPO = Path(__file__).resolve().parent.parent
MAIN_JOB = ["batch_size=8,32,64,128", "backend=jax", "probes=false"]
BLOCK = "gpu-share"


class GpuSampler:
    """nvidia-smi's utilisation and memory in use, every 0.25 s, while a command runs (nothing without nvidia-smi)."""

    def __init__(self):
        self.samples: list[tuple[float, float]] = []
        self._process, self._reader = None, None
        if shutil.which("nvidia-smi"):
            self._process = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits",
                 "-lms", "250", "-i", first_gpu()], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()

    def _read(self):
        for line in self._process.stdout:
            try:
                util, memory = (float(part) for part in line.split(","))
            except ValueError:
                continue
            self.samples.append((util, memory))

    def stop(self) -> dict:
        if self._process is not None:
            self._process.terminate()
            self._process.wait()
            self._reader.join(timeout=5)  # the last samples read
        if not self.samples:
            return {"gpu_busy": None, "gpu_memory_mib": None}
        return {"gpu_busy": statistics.fmean(u for u, _ in self.samples),
                "gpu_memory_mib": max(m for _, m in self.samples)}


def first_gpu() -> str:
    """The GPU the sweeps run on: the first of CUDA_VISIBLE_DEVICES (gpu_smoke.sh sets it), else 0."""
    return (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]


def _stamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text).timestamp()


def read_sweep(folder: Path) -> dict:
    """What the runs of one sweep folder say: completed runs, their wall time (first start to last end), a run's
    median training and whole-run seconds, each batch size's median samples/s over epochs 2..."""
    import pandas as pd

    records = {path.parent: json.loads(path.read_text()) for path in folder.glob("*/run.json")}
    speeds: dict[int, list[float]] = {}
    for run_folder, record in records.items():
        if (run_folder / "metrics.parquet").exists():
            speed = pd.read_parquet(run_folder / "metrics.parquet")["samples_per_second"]
            speeds.setdefault(record["config"]["batch_size"], []).append(
                float(speed.iloc[1:].median() if len(speed) > 1 else speed.iloc[0]))
    runs = list(records.values())  # their times are to the second (run.json): so is the runs' wall time
    ended = [r for r in runs if r.get("finished_at") and r.get("started_at")]
    span = None
    if ended:
        span = max(_stamp(r["finished_at"]) for r in ended) - min(_stamp(r["started_at"]) for r in ended)

    def median(key):
        values = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(values) if values else None

    return {"folder": folder.name, "runs": len(runs), "epochs": runs[0]["config"]["epochs"] if runs else None,
            "completed": sum(r["status"] == "completed" for r in runs),
            "failed": sum(r["status"] == "failed" for r in runs), "span_s": span,
            "fit_s": median("fit_seconds"), "run_s": median("run_seconds"),
            "speeds": {str(b): statistics.median(v) for b, v in sorted(speeds.items())},
            "devices": sorted({d for r in runs for d in r["environment"].get("devices", [])}),
            "share": runs[0]["environment"].get("share", {}) if runs else {}}


def _stop(process: subprocess.Popen) -> int:
    """SIGTERM to the sweep's whole process group (it records its runs `interrupted`), SIGKILL a minute later."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait()


def run_sweep(folder: Path, seeds: str, k: int, gpus: int, extra: list[str], timeout: float) -> dict:
    """One sweep as a user types it, in a process session of its own: stopped past `timeout` (the row says
    `deadline`), and with this script (Ctrl-C, a timeout around it), so that no sweep goes on on the GPU."""
    command = [sys.executable, "-m", "harness", *MAIN_JOB, f"seed={seeds}", f"gpus={gpus}",
               f"hydra.launcher.runs_per_gpu={k}", f"hydra.sweep.dir={folder}", *extra, "-m"]
    sampler = GpuSampler() if gpus else None
    started, deadline = time.perf_counter(), False
    try:
        with open(f"{folder}.log", "w") as log:
            process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            try:
                code = process.wait(timeout=max(timeout, 1))
            except subprocess.TimeoutExpired:
                code, deadline = _stop(process), True
            except BaseException:
                _stop(process)
                raise
    finally:
        gpu = sampler.stop() if sampler else {"gpu_busy": None, "gpu_memory_mib": None}
    wall = time.perf_counter() - started
    return {"seeds": seeds, "k": k, "exit_code": code, "deadline": deadline, "wall_s": wall, **gpu,
            **read_sweep(folder)}


def machine() -> str:
    """Where the measurements ran, for the block's provenance line ("NAME with JAX V, N CPU cores"; no comma)."""
    name = platform.machine()
    if shutil.which("nvidia-smi"):
        found = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", first_gpu()],
                               capture_output=True, text=True, timeout=60).stdout.strip()
        name = found or name
    try:
        import jax
        name += f" with JAX {jax.__version__}"
    except ImportError:
        pass
    return f"{name.replace(',', ' ')}, {os.cpu_count()} CPU cores"


def measure(out: Path, seeds: str, ks: list[int], repeats: int, gpus: int, extra: list[str], deadline: float,
            command: str) -> list[dict]:
    """A warm-up sweep, then `repeats` rounds of every K in turn; each sweep appended to out/results.json at once."""
    out.mkdir(parents=True, exist_ok=True)
    results_file = out / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {"sweeps": []}
    results.update(machine=machine(), date=datetime.date.today().isoformat())
    results["commands"] = [c for c in results.get("commands", []) if c != command] + [command]
    tag = seeds.replace(",", "_")
    plan = [("warm", max(ks))] + [(str(r + 1), k) for r in range(repeats) for k in ks]
    first = len(results["sweeps"])  # folders numbered on from the sweeps already there: no command reuses one
    for name, k in plan:
        left = deadline - time.time()
        if left < 10:
            print(f"bench_gpu_share: deadline reached, skipped seed={seeds} K={k} round {name}", flush=True)
            continue
        folder = out / f"{first + plan.index((name, k)):02d}-s{tag}-k{k}-{name}"
        row = {"round": name, **run_sweep(folder, seeds, k, gpus, extra, left)}
        print(f"bench_gpu_share: seed={seeds} K={k} round {name}: exit {row['exit_code']}, "
              f"{row['completed']}/{row['runs']} completed, wall {row['wall_s']:.1f} s, runs {row['span_s']} s, "
              f"GPU busy {row['gpu_busy']}, devices {row['devices']}", flush=True)
        results["sweeps"].append(row)
        results_file.write_text(json.dumps(results, indent=1))
    return results["sweeps"]


def _fmt(value, spec: str, unit: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{unit}"


def _clean(row: dict) -> bool:
    """A timed sweep whose every run completed: a sweep cut at the deadline or with a failed run times nothing."""
    return (row.get("round") != "warm" and row.get("exit_code") == 0 and not row.get("deadline")
            and row["completed"] == row["runs"] > 0)


def _failed(row: dict) -> bool:
    """A run failed (out of memory, say), or the command ran none (refused); not a sweep the deadline stopped."""
    return bool(row.get("failed")) or (not row.get("deadline") and (row["completed"] < row["runs"] or not row["runs"]))


def table(results: dict) -> str:
    """Median over rounds per (seeds, K) of the clean timed sweeps; the runs' wall time also as a ratio of the
    median at K = 1 with the same seeds; the sweeps left out, named below the table."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for row in filter(_clean, results["sweeps"]):
        groups.setdefault((row["seeds"], row["k"]), []).append(row)
    batches = sorted({int(b) for rows in groups.values() for row in rows for b in row["speeds"]})
    lines = ["| runs | K | rounds | runs' wall time (÷ K = 1) | command's wall time | a run: training / all | "
             f"samples/s (thousands) at batch {' / '.join(map(str, batches))} | GPU busy · memory held |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]

    def median(rows, key):
        values = [row[key] for row in rows if row.get(key) is not None]
        return statistics.median(values) if values else None

    for (seeds, k), rows in sorted(groups.items(), key=lambda item: (len(item[0][0]), item[0][1])):
        span, base = median(rows, "span_s"), median(groups.get((seeds, 1), []), "span_s")
        speeds = " / ".join(_fmt(None if speed is None else speed / 1000, ".1f") for speed in (
            median([{"v": r["speeds"].get(str(b))} for r in rows], "v") for b in batches))
        memory = max((r["gpu_memory_mib"] or 0 for r in rows), default=0)
        ratio = _fmt(span / base if span and base else None, ".2f", "x")
        held = _fmt(memory / 1024 if memory else None, ".0f", " GiB")
        lines.append(
            f"| {rows[0]['runs']} (seed={seeds}) | {k} | {len(rows)} | {_fmt(span, '.1f', ' s')} ({ratio}) | "
            f"{_fmt(median(rows, 'wall_s'), '.1f', ' s')} | {_fmt(median(rows, 'fit_s'), '.1f', ' s')} / "
            f"{_fmt(median(rows, 'run_s'), '.1f', ' s')} | {speeds} | {_fmt(median(rows, 'gpu_busy'), '.0f', '%')} · "
            f"{held} |")
    epochs = sorted({row.get("epochs") for rows in groups.values() for row in rows} - {None})
    measured = " and ".join(f"`{command}`" for command in results.get("commands", []))
    text = [f"Measured by {measured} on {results.get('machine')}, tabled from their results.json. " if measured else "",
            f"Each row: the median of its rounds (MNIST-1D convnet, {' or '.join(map(str, epochs))} epochs, "
            "`backend=jax gpus=1 probes=false`), after one untimed sweep that filled the caches; each round ran "
            "every K in turn. K: `hydra.launcher.runs_per_gpu`. Runs' wall time: the first run's start to the "
            "last run's end, to the second (run.json's times); a run: its median "
            "training (fit) and whole-run seconds; GPU busy: the mean of nvidia-smi's utilisation (the share of "
            "time a kernel ran) while the command ran; GPU memory held: the most in use, which is what JAX "
            "reserves (75% of the GPU for one run, 0.9/K each when shared), not what the runs need.", "",
            *lines]
    text[:2] = ["".join(text[:2])]
    left_out = [row for row in results["sweeps"] if row.get("round") != "warm" and not _clean(row)]
    if left_out:
        text += ["", "Left out: " + "; ".join(
            f"seed={row['seeds']} K={row['k']} round {row['round']} ({row['completed']} of {row['runs']} runs "
            f"completed; {'stopped at the deadline' if row.get('deadline') else 'exit ' + str(row.get('exit_code'))})"
            for row in left_out) + "."]
    return "\n".join(text)


def merged(folders: list[Path]) -> dict:
    """The results.json of several measurement folders as one (their sweeps together; machines and commands
    listed once each)."""
    parts = [json.loads((folder / "results.json").read_text()) for folder in folders]
    return {"machine": " / ".join(dict.fromkeys(part.get("machine", "an unnamed machine") for part in parts)),
            "date": max(part.get("date", "1970-01-01") for part in parts),
            "commands": list(dict.fromkeys(c for part in parts for c in part.get("commands", []))),
            "sweeps": [row for part in parts for row in part["sweeps"]]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="measure here (a JAX machine with a GPU); results.json is added to")
    parser.add_argument("--from", dest="sources", type=Path, nargs="+", default=[],
                        help="only the table of these folders' results.json, together")
    parser.add_argument("--seeds", default="0", help="the main job's seeds (default 0: its 4 runs)")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 4], help="runs_per_gpu values (default 1 4)")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds of every K (default 2)")
    parser.add_argument("--deadline", type=float, default=float(os.environ.get("BENCH_DEADLINE", "inf")),
                        help="unix time after which no sweep starts; a running one gets SIGTERM there "
                             "(default $BENCH_DEADLINE, else none)")
    parser.add_argument("--command", default=None, help="the command named in the block's provenance line")
    parser.add_argument("--update-docs", action="store_true", help="write the table into docs/sweeps.md")
    parser.add_argument("--smoke", action="store_true", help="CPU (gpus=0), 1 epoch, K 1 and 2, once: the script")
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as folder:
            rows = measure(Path(folder), "0", [1, 2], 1, 0, ["epochs=1", "dataset.num_samples=400"], float("inf"),
                           "smoke")
            print(table({"sweeps": rows}))
            sys.exit(0 if all(row["completed"] == row["runs"] == 4 for row in rows) else 1)
    failed = False
    if args.out:
        command = args.command or " ".join(["python -m benchmarks.bench_gpu_share", *(argv or sys.argv[1:])])
        before = len(json.loads((args.out / "results.json").read_text())["sweeps"]) if (
            args.out / "results.json").exists() else 0
        rows = measure(args.out, args.seeds, args.k, args.repeats, 1, [], args.deadline, command)[before:]
        # a run that failed (out of memory, say) or a command that ran none fails the script; the deadline does not
        failed = any(map(_failed, rows))
    if args.out and args.sources:
        parser.error("--out measures and tables that folder; --from tables others: give one of them")
    sources = [args.out] if args.out else args.sources
    if not sources:
        parser.error("give --out DIR (measure), --from DIR [DIR ...] (table) or --smoke")
    results = merged(sources)
    text = table(results)
    print(text)
    if args.update_docs:
        doc_blocks.replace_section(BLOCK, text, on=results["machine"],
                                   when=datetime.date.fromisoformat(results["date"]))
    if failed:
        print("bench_gpu_share: FAILED: a run did not complete (its sweep's .log and run.json say why)")
        sys.exit(1)

if __name__ == "__main__":
    main()
