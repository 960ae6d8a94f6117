"""What the study matrices share (benchmarks/diagnose_matrix, benchmarks/recover_matrix): each case a command run
in a fresh folder of its own, one row of the table per case, the table printed and, with --update-docs, written to
its block of the docs."""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from benchmarks import doc_blocks

NOTE = "Case 1 runs with the end-of-run probes (the default); the others with probes=false."


def main(argv: list[str] | None, description: str, cases: Sequence, smoke, row: Callable[[object, Path], str],
         header: str, block: str) -> int:
    """Parse `--smoke` / `--update-docs`, run each case (`row(case, folder)` runs it in a temporary folder and
    returns its row), print the table and write it to `block` unless this is a smoke round."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--smoke", action="store_true", help="one tiny case, to check the script works")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/studies.md")
    args = parser.parse_args(argv)
    rows = []
    started = time.perf_counter()
    for case in [smoke] if args.smoke else cases:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(row(case, Path(tmp)))
        print(rows[-1], file=sys.stderr, flush=True)
    total = time.perf_counter() - started
    table = (f"{header}\n" + "\n".join(rows) + f"\n\nAll cases one after another: {total / 60:.1f} minutes, on "
             f"{doc_blocks.machine()} with nothing else running. {NOTE}")
    print(table)
    if args.update_docs and not args.smoke:
        doc_blocks.replace_section(block, table)
    return 0


def run_study(study: str, name: str, overrides: Sequence[str], folder: Path) -> tuple[Path, float]:
    """`python -m harness +study=STUDY OVERRIDES -m` in `folder`, as a user runs it: (its sweep folder, the
    command's wall seconds); a command that fails raises, naming the case `name`."""
    sweep = folder / "sweeps" / study
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness", f"+study={study}", *overrides,
                           f"hydra.sweep.dir={sweep}", "-m"], cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return sweep, wall
