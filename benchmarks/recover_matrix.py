"""+study=recover on three cases of MNIST-1D: at the batch a practitioner needs, does a recipe searched on the problem
keep the small batch's accuracy, and if not, what does the large batch cost?

    python -m benchmarks.recover_matrix                 # the three cases, one after another
    python -m benchmarks.recover_matrix --update-docs   # also rewrite docs/studies.md's table
    python -m benchmarks.recover_matrix --smoke         # one tiny case, to check the script works

Each case is `python -m harness +study=recover OVERRIDES -m` in a fresh process, with the study's defaults (3
seeds, 16 trials, 3 confirmed, the budget), two runs at once, as a user runs it, timed from start to exit. The
table gives each case's drop, the recipe, the share of the drop it recovers (or its gap to b), the verdict, the
budget's line and the wall time, from recovery.json. Nothing here is asserted: whatever the runs say is the row.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks import matrix
from harness.store import sweep_file
from harness.studies.recover import files as recovery_file


@dataclass(frozen=True)
class Case:
    name: str
    overrides: tuple[str, ...]


QUIET = ("probes=false",)  # the end-of-run probes only in the case whose cost the issue sets (case 1)
CASES = [
    Case("1. the main job's setting, batch 8 vs 128, 5 epochs", ("batch_size=8,128", "epochs=5")),
    Case("2. the seed note's case: batch norm, batch 8 vs 64, 2 epochs",
         ("model.batch_norm=true", "batch_size=8,64", "epochs=2", *QUIET)),
    Case("3. batch 8 vs 512, 5 epochs", ("batch_size=8,512", "epochs=5", *QUIET)),
]
SMOKE = Case("smoke: 600 samples, 1 epoch, 2 seeds, 2 trials",
             ("dataset.num_samples=600", "batch_size=16,64", "epochs=1", "seed=0,1", "recover.trials=2",
              "recover.confirm=1", *QUIET))


def run_case(case: Case, folder: Path) -> tuple[dict, float, int]:
    """(recovery.json, the command's wall seconds, the runs it planned) of one case."""
    sweep, wall = matrix.run_study("recover", case.name, case.overrides, folder)
    return recovery_file.read(sweep), wall, len(sweep_file.read(sweep)["jobs"])


def _interval(values: dict | None, percent: bool = False) -> str:
    if not values or values.get("value") is None:
        return "–"
    form = (lambda v: f"{v:.0%}") if percent else (lambda v: f"{v:+.3f}")
    low, high = values.get("low"), values.get("high")
    return form(values["value"]) + ("" if low is None else f" [{form(low)}, {form(high)}]")


def _budget(found: dict) -> str:
    budget = found["budget"]
    if found["verdict"] is None:
        return "no verdict"
    if found["verdict"] == "recovered":
        return "not needed"
    if not budget["asked"]:
        return "not asked"
    reached = next((x for x in budget["lengths"] if x["reached"]), None)
    if reached is not None:
        wall = "" if reached["wall_ratio"] is None else f", {reached['wall_ratio']:.2f}x b's wall time"
        return f"b's tune_acc reached at {reached['multiple']:g}x the epochs ({reached['epochs']}){wall}"
    tried = [f"{x['multiple']:g}x: {x['tune_acc']:.3f}" for x in budget["lengths"] if x["tune_acc"] is not None]
    small = "–" if budget["small_tune_acc"] is None else f"{budget['small_tune_acc']:.3f}"
    return (f"b's tune_acc ({small}) not reached" +
            (f" ({', '.join(tried)})" if tried else ""))


def row(case: Case, found: dict, wall: float, runs: int) -> str:
    recipe = ", ".join(f"`{k}={v}`" for k, v in (found.get("recipe") or {}).items() if v is not None) or "–"
    trial = "–" if found.get("recipe_trial") is None else f"trial {found['recipe_trial']}: {recipe}"
    verdict = found["verdict"] or "no verdict"
    if found["verdict"] == "recovered":
        verdict += ", shown" if found["shown"] else ", not shown" + (
            f" (about {found['seeds_needed']} seeds would show it)" if found.get("seeds_needed") else "")
    command = " ".join(f"`{o}`" for o in case.overrides if o not in QUIET)  # a code span each: lines wrap between
    gap = found.get("gap") or {}
    return (f"| {case.name}:<br>{command} | {_interval(found['drop'])} | {trial} | "
            f"{_interval(gap)} | {_interval(found.get('recovered'), percent=True)} | {verdict} | {_budget(found)} | "
            f"{runs} | {wall / 60:.1f} min |")


HEADER = ("| case: `+study=recover` with | drop v(b) − v(B), 95% interval | the recipe at B | v(b) − v(recipe) | share "
          "of the drop recovered | verdict | budget | runs | wall time |\n"
          "| --- | --- | --- | --- | --- | --- | --- | ---: | ---: |")


def main(argv: list[str] | None = None) -> int:
    return matrix.main(argv, __doc__.splitlines()[0], CASES, SMOKE,
                       lambda case, folder: row(case, *run_case(case, folder)), HEADER, "recover-matrix")


if __name__ == "__main__":
    sys.exit(main())
