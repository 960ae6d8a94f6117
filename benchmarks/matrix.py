"""What the study matrices share (benchmarks/diagnose_matrix, benchmarks/recover_matrix): each case a command run
in a fresh folder of its own, one row of the table per case, the table printed and, with --update-docs, written to
its block of the docs. With --before REV (where the matrix takes it) each case also runs on the code of git
revision REV (a worktree of this repository, first on the path), one after the other, so that a change's cost is
measured against the code before it on the same machine."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from benchmarks import doc_blocks

NOTE = "Case 1 runs with the end-of-run probes (the default); the others with probes=false."


def main(argv: list[str] | None, description: str, cases: Sequence, smoke, row: Callable[..., str],
         header: str, block: str, before: bool = False) -> int:
    """Parse `--smoke` / `--update-docs` (and `--before REV` where `before`), run each case (`row(case, folder)`
    runs it in a temporary folder and returns its row; `row(case, folder, code)` with the code before), print the
    table and write it to `block` unless this is a smoke round."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--smoke", action="store_true", help="one tiny case, to check the script works")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/studies.md")
    if before:
        parser.add_argument("--before", metavar="REV", default=None,
                            help="also run each case on the code of git revision REV: its run-seconds beside")
    args = parser.parse_args(argv)
    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as code:
        earlier = worktree(args.before, Path(code) / "before") if getattr(args, "before", None) else None
        for case in [smoke] if args.smoke else cases:
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(row(case, Path(tmp), earlier) if before else row(case, Path(tmp)))
            print(rows[-1], file=sys.stderr, flush=True)
        if earlier is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(earlier)], check=True)
    total = time.perf_counter() - started
    table = (f"{header}\n" + "\n".join(rows) + f"\n\nAll cases one after another: {total / 60:.1f} minutes, on "
             f"{doc_blocks.machine()} with nothing else running. {NOTE}")
    print(table)
    if args.update_docs and not args.smoke:
        doc_blocks.replace_section(block, table)
    return 0


def worktree(revision: str, into: Path) -> Path:
    """A checkout of `revision` of this repository at `into` (git worktree), for run_study's `code`."""
    root = Path(__file__).resolve().parents[1]
    subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", str(into), revision], check=True,
                   capture_output=True)
    return into


def run_seconds(sweep: Path) -> float:
    """The sweep's runs' run.json run_seconds (set-up to end), summed: what its trainings cost."""
    return sum(json.loads(path.read_text()).get("run_seconds") or 0.0 for path in sweep.glob("*/run.json"))


def run_study(study: str, name: str, overrides: Sequence[str], folder: Path,
              code: Path | None = None) -> tuple[Path, float]:
    """`python -m harness +study=STUDY OVERRIDES -m` in `folder`, as a user runs it (`code`: a checkout whose harness
    runs instead of this one): (its sweep folder, the command's wall seconds); a command that fails raises, naming
    the case `name`."""
    sweep = folder / "sweeps" / study
    env = dict(os.environ)
    if code is not None:  # its harness and Hydra plugins first on the path
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "harness", f"+study={study}", *overrides,
                           f"hydra.sweep.dir={sweep}", "-m"], cwd=folder, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return sweep, wall
