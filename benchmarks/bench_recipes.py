"""The main job's setting at its smallest and largest batch under a few training recipes: what each recipe's final
val_acc is, with its 95% interval over seeds, and what a run of it costs against the constant-Adam run.

    python -m benchmarks.bench_recipes                   # one sweep: batch 8 and 128 x the recipes x 3 seeds
    python -m benchmarks.bench_recipes --update-docs     # also rewrite docs/studies.md's table
    python -m benchmarks.bench_recipes --sweep sweeps/recipes   # the table of a sweep already run
    python -m benchmarks.bench_recipes --smoke           # a tiny sweep, to check the script works

The sweep is one command a user can run (`python -m harness batch_size=8,128 optimizer=adam,adamw,lamb
lr_schedule=constant,cosine -m`, the main job's 15 epochs and learning rate), two runs at once. Each recipe's
time ratio is the median run_seconds of its runs at a batch size over the constant-Adam runs' at the same batch
size, in the same sweep. Nothing here is asserted.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks import doc_blocks

COMMAND = ["batch_size=8,128", "optimizer=adam,adamw,lamb", "lr_schedule=constant,cosine", "probes=false"]
SMOKE = ["batch_size=16,64", "optimizer=adam,lamb", "lr_schedule=constant,cosine", "probes=false", "seed=0",
         "epochs=2", "dataset.num_samples=600"]
BASELINE = ("adam", "constant")


def run_sweep(folder: Path, command: list[str]) -> tuple[Path, float]:
    """(the sweep folder, the command's wall seconds) of the recipes' sweep, run as a user runs it."""
    sweep = folder / "sweeps" / "recipes"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness", *command, f"hydra.sweep.dir={sweep}", "-m"], cwd=folder,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr[-2000:]}")
    return sweep, time.perf_counter() - started


def finals(sweep: Path) -> pd.DataFrame:
    """One row per completed run: batch, optimizer, schedule, seed, final val_acc and run_seconds."""
    from harness.assess import analysis
    from harness.assess.sweep import read

    data = read(sweep)
    final = analysis.final_results(data.epochs)
    seconds = {record["run_id"]: record.get("run_seconds") for record in data.records}
    return pd.DataFrame({"batch": final["global_batch_size"].astype(int), "optimizer": final["optimizer"],
                         "schedule": final["lr_schedule"], "seed": final["seed"].astype(int),
                         "val_acc": final["val_acc"].astype(float),
                         "seconds": final["run_id"].map(seconds).astype(float)})


def rows(runs: pd.DataFrame) -> list[dict]:
    """Per recipe and batch size: mean val_acc with its 95% t-interval over seeds, and the median run time over the
    constant-Adam runs' median at that batch size."""
    from harness.assess.intervals import t_interval

    baseline = {batch: statistics.median(cell["seconds"]) for batch, cell in
                runs[(runs["optimizer"] == BASELINE[0]) & (runs["schedule"] == BASELINE[1])].groupby("batch")}
    out = []
    for (optimizer, schedule, batch), cell in runs.groupby(["optimizer", "schedule", "batch"], sort=True):
        values = cell["val_acc"].to_numpy()
        low, high = t_interval(values) if len(values) > 1 else (None, None)
        out.append({"optimizer": optimizer, "schedule": schedule, "batch": int(batch), "seeds": len(values),
                    "val_acc": float(values.mean()), "low": low, "high": high,
                    "time_ratio": statistics.median(cell["seconds"]) / baseline[batch] if batch in baseline else None})
    return out


def table(found: list[dict]) -> str:
    """The docs' table: one line per recipe, a column per batch size."""
    batches = sorted({r["batch"] for r in found})
    recipes = list(dict.fromkeys((r["optimizer"], r["schedule"]) for r in found))
    by = {(r["optimizer"], r["schedule"], r["batch"]): r for r in found}

    def cell(r: dict | None) -> str:
        if r is None:
            return "–"
        interval = "" if r["low"] is None else f" [{r['low']:.3f}, {r['high']:.3f}]"
        ratio = "" if r["time_ratio"] is None else f"; {r['time_ratio']:.2f}x the time"
        return f"{r['val_acc']:.3f}{interval}{ratio}"

    header = ("| `optimizer` | `lr_schedule` | " + " | ".join(f"batch {b}: val_acc [95% CI]; run time ÷ constant "
                                                              "Adam's" for b in batches) + " |")
    lines = [header, "| --- | --- | " + " | ".join("---" for _ in batches) + " |"]
    lines += [f"| `{o}` | `{s}` | " + " | ".join(cell(by.get((o, s, b))) for b in batches) + " |" for o, s in recipes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=Path, help="a sweep of the recipes already run: only its table")
    parser.add_argument("--smoke", action="store_true", help="a tiny sweep, to check the script works")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/studies.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        command = SMOKE if args.smoke else COMMAND
        sweep, wall = (args.sweep, None) if args.sweep else run_sweep(Path(tmp), command)
        found = rows(finals(sweep))
    command = " ".join(["python -m harness", *command, "-m"])
    text = (f"{table(found)}\n\nOne sweep, `{command}` (the main job's 15 epochs, lr 0.001, 3 seeds), on "
            f"{doc_blocks.machine()}" + (f", two runs at once: {wall / 60:.1f} minutes in all" if wall else "")
            + ". The time ratio is a median run's seconds over the constant-Adam runs' median at the same batch "
            "size, in the same sweep.")
    print(text)
    if args.update_docs and not args.smoke:
        doc_blocks.replace_section("recipes", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
