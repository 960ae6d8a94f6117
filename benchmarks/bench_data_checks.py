"""What the data checks cost (harness.data.validity): their share of a one-epoch run's whole command, measured
inside the command itself.

    python -m benchmarks.bench_data_checks                  # medians of 3
    python -m benchmarks.bench_data_checks --update-docs  # also rewrite the README's table
    python -m benchmarks.bench_data_checks --smoke          # one tiny round, to check the script works

Two commands, each `python -m harness ... epochs=1 probes=false` (one run, its process started from the shell
as a user's is): the default MNIST-1D, and a folder of 10,000 PNG images (10 classes, 32x32). The command runs
with every entry point of harness.data.validity wrapped in a timer (a few lines run before the command's own
module, in the same process); the share is the checks' seconds over the command's wall time, both from that
one process, so nothing else on the machine enters the ratio twice.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# runs before the command: every entry point of the checks adds its seconds to a file (the command ends with
# os._exit, so nothing can be written at exit); nested calls are counted once
PRELUDE = """
import runpy, sys, time
from harness.data import validity
depth, log = [0], open(sys.argv.pop(1), "a")
def timed(function):
    def wrapper(*args, **kwargs):
        depth[0] += 1
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                log.write(f"{time.perf_counter() - started}\\n"); log.flush()
    return wrapper
for name in ("arrays", "finite", "label_values", "same_length"):
    setattr(validity, name, timed(getattr(validity, name)))
sys.argv[0] = "harness"
runpy.run_module("harness", run_name="__main__", alter_sys=True)
"""


def write_images(root: Path, count: int, classes: int = 10) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for k in range(count):
        folder = root / f"class{k % classes}"
        folder.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 255, (32, 32, 3), dtype=np.uint8) // (1 + k % classes)
        Image.fromarray(pixels).save(folder / f"{k}.png")


def command(overrides: list[str], folder: Path) -> tuple[float, float, int]:
    """(the command's wall seconds, seconds in the checks, how many times they ran) for one run."""
    spent = folder / "checks.txt"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PRELUDE, str(spent), *overrides, "epochs=1", "probes=false",
                           f"hydra.run.dir={folder / 'run'}"], capture_output=True, text=True, cwd=folder)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    times = [float(line) for line in spent.read_text().split()]
    return wall, sum(times), len(times)


def table(cases: list[tuple[str, list[tuple[float, float, int]]]], repeats: int) -> str:
    """Each case's commands (wall seconds, seconds in the checks, calls) as the docs' table: medians, and the checks'
    share of the wall time (the median of each command's share)."""
    rows = []
    for name, measured in cases:
        wall = statistics.median(m[0] for m in measured)
        share = statistics.median(100 * m[1] / m[0] for m in measured)
        rows.append(f"| {name} | {wall:.1f} s | {statistics.median(m[1] for m in measured) * 1000:.1f} ms "
                    f"({measured[0][2]} calls) | {share:.2f}% |")
    return "\n".join([
        f"Medians of {repeats} (`python -m benchmarks.bench_data_checks`; each command one run, one epoch, probes "
        "off):",
        "",
        "| one-epoch command | wall time | in the data checks | share of the wall time |",
        "| --- | ---: | ---: | ---: |",
        *rows,
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="600 MNIST-1D samples, 200 images, 1 repeat")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true", help="rewrite its generated blocks in README.md and docs/")
    args = parser.parse_args(argv)
    images = 200 if args.smoke else 10_000
    repeats = 1 if args.smoke else args.repeats
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_images(Path(tmp) / "images", images)
        cases = {
            "MNIST-1D" + (" (600 samples)" if args.smoke else ""): (["dataset.num_samples=600"] if args.smoke else []),
            f"a folder of {images:,} images": ["dataset=images", f"dataset.path={Path(tmp) / 'images'}",
                                               "dataset.image_size=[32,32]", "model=mlp"],
        }
        for name, overrides in cases.items():
            measured = []
            for r in range(repeats):
                folder = Path(tmp) / f"{len(rows)}-{r}"
                folder.mkdir()
                measured.append(command(overrides, folder))
            rows.append((name, measured))
    text = table(rows, repeats)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("data-checks-cost", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
