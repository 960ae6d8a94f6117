"""+study=diagnose on six cases of MNIST-1D, each injected by the harness's own keys: does the diagnosis name what
was injected, and nothing else?

    python -m benchmarks.diagnose_matrix                 # the six cases, one after another
    python -m benchmarks.diagnose_matrix --update-docs   # also rewrite docs/studies.md's table
    python -m benchmarks.diagnose_matrix --smoke         # one tiny case, to check the script works

Each case is `python -m harness +study=diagnose OVERRIDES -m` in a fresh process (3 seeds, two runs at once), as a
user runs it, timed from start to exit. The table gives each case's parts with their 95% intervals over paired
seeds, the checks it flagged, whether that is what the case expects, the data checks' share of the wall time,
and the wall time. Nothing here is asserted: a case that does not come out as expected says so in its row.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks import matrix
from harness.studies.diagnose import files as diagnosis_file


@dataclass(frozen=True)
class Case:
    name: str
    overrides: tuple[str, ...]
    largest: str | None = None             # the part expected to be the largest
    flagged: frozenset[str] = frozenset()  # the checks expected to fire, and no other

    def expected(self, found: dict) -> tuple[bool, str]:
        """(whether the diagnosis came out as this case expects, what it expected)."""
        flagged = {c["name"] for c in found["checks"] if c["flagged"]}
        wanted = [f"flagged: {', '.join(sorted(self.flagged)) or 'none'}"]
        ok = flagged == set(self.flagged)
        if self.largest is not None:
            measured = [p for p in found["parts"] if p["value"] is not None]
            top = max(measured, key=lambda p: p["value"])["name"] if measured else None
            ok &= top == self.largest
            wanted.insert(0, f"{self.largest} the largest part")
        return ok, "; ".join(wanted)


QUIET = ("probes=false",)  # the end-of-run probes only in the case whose cost the issue sets (case 1)
CASES = [
    Case("1. the seed note: batch norm, batch 8 vs 64, 2 epochs", ("model.batch_norm=true", "batch_size=8,64",
                                                                     "epochs=2"), largest="stale_statistics"),
    Case("2. the main job's setting, 5 epochs, batch 8 vs 128", ("batch_size=8,128", "epochs=5", *QUIET),
         largest="fewer_updates"),
    Case("3. class imbalance", ("imbalance=0.9", "batch_size=8,64", "epochs=3", *QUIET),
         flagged=frozenset({"label_shift"})),
    Case("4. unshuffled, class-sorted data", ("shuffle=false", "batch_size=8,64", "epochs=3", *QUIET),
         flagged=frozenset({"order"})),
    Case("5. validation shifted by one standard deviation",
         ("preprocess_mismatch=shifted", "batch_size=8,64", "epochs=3", *QUIET), flagged=frozenset({"feature_shift"})),
    Case("6. the plain case", ("batch_size=8,64", "epochs=3", *QUIET)),
]
SMOKE = Case("smoke: 600 samples, 1 epoch, one seed", ("dataset.num_samples=600", "batch_size=16,64", "epochs=1",
                                                       "seed=0", *QUIET))


def run_case(case: Case, folder: Path) -> tuple[dict, float, float]:
    """(diagnosis.json, the command's wall seconds, the data checks' seconds) of one case."""
    sweep, wall = matrix.run_study("diagnose", case.name, case.overrides, folder)
    found = diagnosis_file.read(sweep)
    checks = sum(json.loads(p.read_text())["seconds"] for p in sweep.glob("*/data_checks.json"))
    checks += sum(c.get("seconds") or 0.0 for c in found["checks"] if c["name"] == "capacity")
    return found, wall, checks


def _part(part: dict) -> str:
    if part["value"] is None:
        return f"{part['name']} not measured"
    interval = "" if part["low"] is None else f" [{part['low']:+.3f}, {part['high']:+.3f}]"
    return f"{part['name']} {part['value']:+.3f}{interval}"


def row(case: Case, found: dict, wall: float, checks: float) -> str:
    ok, wanted = case.expected(found)
    drop = found["drop"]
    drop_text = f"{drop['value']:+.3f}" + ("" if drop["low"] is None else f" [{drop['low']:+.3f}, {drop['high']:+.3f}]")
    flagged = ", ".join(c["name"] for c in found["checks"] if c["flagged"]) or "none"
    command = " ".join(f"`{o}`" for o in case.overrides if o not in QUIET)  # a code span each: lines wrap between
    return (f"| {case.name}:<br>{command} | {drop_text} | {'<br>'.join(_part(p) for p in found['parts'])} | "
            f"{flagged} | {'yes' if ok else 'no'}: {wanted} | {100 * checks / wall:.1f}% | {wall:.0f} s |")


HEADER = ("| case: `+study=diagnose` with | drop | parts, 95% intervals over paired seeds | flagged checks | as "
          "expected | data checks' share of the wall time | wall time |\n| --- | --- | --- | --- | --- | ---: | ---: |")


def main(argv: list[str] | None = None) -> int:
    return matrix.main(argv, __doc__.splitlines()[0], CASES, SMOKE,
                       lambda case, folder: row(case, *run_case(case, folder)), HEADER, "diagnose-matrix")


if __name__ == "__main__":
    sys.exit(main())
