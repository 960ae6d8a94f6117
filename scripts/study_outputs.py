"""What a user sees of some sweeps, rebuilt from their files into one folder, so that two versions of the code can be
compared file by file (`diff -r`): each sweep's report (its generation time masked), the files a study writes into
the sweep folder (diagnosis.json, recovery.json), `python -m harness.results`'s table and the findings block
(`python -m scripts.findings`); report.txt is the report's text.

    python -m scripts.study_outputs sweeps/main sweeps/diagnose sweeps/recover --out /tmp/after
    git stash; python -m scripts.study_outputs ... --out /tmp/before; git stash pop
    diff -r /tmp/before /tmp/after

Each sweep is copied to one fixed place first (--work), so that the report's paths are the same whichever code
builds it, and the sweep folder given is never written to.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

# what changes from one build to the next whatever the code: when it was built, and the index's own times
MASKS = [(re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"), "[time]")]


def _masked(text: str) -> str:
    for pattern, mask in MASKS:
        text = pattern.sub(mask, text)
    return text


def report_text(html: str, sweep_dir: Path) -> str:
    """What a report says, a line per line of its text (blank lines and the sweep folder's path left out): what
    tests/studies/test_outputs.py compares, whichever matplotlib draws the figures."""
    from bs4 import BeautifulSoup

    text = BeautifulSoup(html, "html.parser").get_text().replace(str(sweep_dir), "<sweep>")
    return "\n".join(line.strip() for line in _masked(text).splitlines() if line.strip()) + "\n"


def masked_findings(block: str) -> str:
    """The findings block without what depends on the day and the machine it is written on."""
    return re.sub(r"on \d+ CPU cores, run on \d{4}-\d\d-\d\d", "on <n> CPU cores, run on <day>", block)


def outputs(sweep: Path, out: Path, work: Path) -> None:
    """`sweep`'s outputs (see the module's docstring) into `out`/<its name>/."""
    from harness.studies import registry

    written = sorted({name for study in registry.every() for name in study.file_names()})  # diagnosis.json, ...
    copy = work / sweep.name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(sweep, copy, ignore=shutil.ignore_patterns(*written))
    target = out / sweep.name
    target.mkdir(parents=True, exist_ok=True)
    reports = work / "reports"
    built = subprocess.run([sys.executable, "-m", "harness.report", str(copy), "--out", str(reports)],
                           capture_output=True, text=True, check=True)
    report = Path(built.stdout.strip().splitlines()[-1])
    html = _masked(report.read_text())
    (target / "report.html").write_text(html)
    (target / "report.txt").write_text(report_text(html, copy))
    for name in written:
        if (copy / name).exists():
            shutil.copy(copy / name, target / name)
    table = subprocess.run([sys.executable, "-m", "harness.results", str(copy)], capture_output=True, text=True,
                           check=True)
    (target / "results.txt").write_text(table.stdout)
    subprocess.run([sys.executable, "-m", "harness.results", str(copy), "--out", str(work / "results.csv")],
                   capture_output=True, check=True)
    shutil.copy(work / "results.csv", target / "results.csv")
    from scripts import findings

    with contextlib.redirect_stdout(io.StringIO()):
        block = findings.summarize(copy)
    (target / "findings.md").write_text(masked_findings(block))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.study_outputs", description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", type=Path, nargs="+", help="sweep folders")
    parser.add_argument("--out", type=Path, required=True, help="folder for the outputs, one sub-folder a sweep")
    parser.add_argument("--work", type=Path, default=Path("/tmp/harness-study-outputs"),
                        help="where each sweep is copied to be rebuilt (the same for both versions compared)")
    args = parser.parse_args(argv)
    for sweep in args.sweeps:
        outputs(sweep.resolve(), args.out.resolve(), args.work.resolve())
        print(args.out / sweep.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
