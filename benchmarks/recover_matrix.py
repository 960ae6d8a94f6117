"""+study=recover on four cases of MNIST-1D, two of a user's model with batch norm and one of the built-in MLP with
batch norm on digits, each searched over two spaces: at the batch a practitioner needs, does the study's recipe keep the small batch's accuracy, does it beat the
published rules, and if not, what does the large batch cost?

    python -m benchmarks.recover_matrix                 # the cases, one after another
    python -m benchmarks.recover_matrix --update-docs   # also rewrite docs/studies.md's table
    python -m benchmarks.recover_matrix --smoke         # one tiny case, to check the script works
    python -m benchmarks.recover_matrix --before REV --update-docs  # each case on REV's code too: its cost before

Each case is `python -m harness +study=recover OVERRIDES -m` in a fresh process, with the study's defaults (3
seeds choosing, 16 Sobol trials, the rules, 8 guided trials, 3 confirmed, 3 fresh seeds judging, the budget), two runs at once, as a user runs it,
timed from start to exit, once over the whole default space and once over the learning rate, its warm-up and
schedule and β1 only (SPACES: the tuning playbook's advice below about 25 trials). The table gives each case's
drop, the recipe, its gap to b, the share of the drop it recovers, each rule's and the search's best trial's
v(B) − v(b) on validation (mean over the seeds, every rule run on each), the verdict, the budget's line and the wall
time, from recovery.json and the runs' own metrics. Nothing here is asserted: whatever the runs say is the row.
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks import matrix
from harness.assess import sweep as sweep_files
from harness.store import sweep_file
from harness.studies.recover import files as recovery_file
from harness.studies.recover import reading as recovery
from harness.studies.recover.words import share_text


@dataclass(frozen=True)
class Case:
    name: str
    overrides: tuple[str, ...]


QUIET = ("probes=false",)  # the end-of-run probes only in the case whose cost the issue sets (case 1)
USER_MODEL = "user_models.small_cnn"
SETTINGS = [
    ("1. the main job's setting, batch 8 vs 128, 5 epochs", ("batch_size=8,128", "epochs=5")),
    ("2. the seed note's case: batch norm, batch 8 vs 64, 2 epochs",
     ("model.batch_norm=true", "batch_size=8,64", "epochs=2", *QUIET)),
    ("3. batch 8 vs 512, 5 epochs", ("batch_size=8,512", "epochs=5", *QUIET)),
    ("4. SGD, batch 8 vs 256, 5 epochs", ("optimizer=sgd", "lr=0.01", "batch_size=8,256", "epochs=5", *QUIET)),
    # a user's own model with batch norm (benchmarks/user_models.py, copied where the case runs), on scikit-learn's
    # 8x8 digits: the EMA rule's case
    ("5. a user's CNN with batch norm on digits, batch 8 vs 64, 5 epochs",
     ("dataset=digits", "model=custom", f"model._target_={USER_MODEL}", "batch_size=8,64", "epochs=5", *QUIET)),
    ("6. the same, batch 8 vs 128",
     ("dataset=digits", "model=custom", f"model._target_={USER_MODEL}", "batch_size=8,128", "epochs=5", *QUIET)),
    # a case a session found reading "recovered" on a mean within the tolerance and an interval [-0.053, +0.068]
    ("7. the built-in MLP with batch norm on digits, SGD momentum, batch 8 vs 256, 5 epochs",
     ("dataset=digits", "model=mlp", "model.batch_norm=true", "optimizer=momentum", "lr=0.01", "batch_size=8,256",
      "epochs=5", *QUIET)),
]
# the spaces measured: the default (conf/study/recover.yaml), and the learning rate's keys alone
NARROW = tuple(f"~recover.space.{key}" for key in ("weight_decay", "label_smoothing", "optimizer", "bn_momentum",
                                                   "ghost_batch_size", "precise_bn"))
SPACES = [("", ()), ("lr only", NARROW)]
CASES = [Case(f"{name}{f' ({label})' if label else ''}", (*overrides, *extra))
         for name, overrides in SETTINGS for label, extra in SPACES]
SMOKE = Case("smoke: 600 samples, 1 epoch, 2 seeds, 2 trials",
             ("dataset.num_samples=600", "batch_size=16,64", "epochs=1", "seed=0,1", "recover.trials=2",
              "recover.confirm=1", "recover.guided=2", *QUIET))


def run_case(case: Case, folder: Path, before: Path | None = None) -> tuple[dict, float, int, str, str]:
    """(recovery.json, the command's wall seconds, the runs it planned, the rules' and the search's line, its
    run-seconds and, with the code `before`, theirs and the verdict it read) of one case."""
    sweep, wall = _ran(case, folder / "now")
    now = matrix.run_seconds(sweep)
    cost = f"{now:.0f} s"
    if before is not None:
        earlier, _ = _ran(case, folder / "before", before)
        old, was = matrix.run_seconds(earlier), recovery_file.read(earlier)["verdict"]
        cost += f" ({now / old - 1:+.0%} against {old:.0f} s before, which read {was or 'no verdict'})"
    return recovery_file.read(sweep), wall, len(sweep_file.read(sweep)["jobs"]), against_b(sweep), cost


def _ran(case: Case, folder: Path, code: Path | None = None) -> tuple[Path, float]:
    """(the case's sweep run in `folder`, on the code at `code` where given; the command's wall seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    if f"model._target_={USER_MODEL}" in case.overrides:  # their module, in the folder the command runs in
        shutil.copy(Path(__file__).with_name("user_models.py"), folder)
    return matrix.run_study("recover", case.name, case.overrides, folder, code)


def against_b(sweep: Path) -> str:
    """Each rule's v(B) − v(b) on validation and the search's best confirmed trial's (best mean tune_acc of the
    Sobol and guided trials), mean over the seeds that chose where both ran (the judging seeds run the recipe
    alone): "linear +0.004, sqrt −0.041; search +0.006"."""
    read = sweep_files.read(sweep)
    r = recovery.recover(read)
    if r is None or not r.confirmed:
        return "–"
    arms = recovery.arms(read)
    df = read.epochs.assign(arm=read.epochs["job"].map(lambda job: arms.get(str(job))))
    finals = df[df["status"].isin(recovery.FINISHED)].sort_values("epoch").groupby("run_id").tail(1)
    small = finals[(finals["arm"] == recovery.AS_IS) & (finals["global_batch_size"] == r.small_batch)]
    small = small.set_index("seed")["val_acc"]
    small = small[small.index.isin(r.seeds)]

    def versus(number: int) -> str:
        runs = finals[finals["arm"] == f"trial_{number}"].set_index("seed")["val_acc"]
        paired = (runs - small).dropna()
        return "–" if paired.empty else f"{paired.mean():+.3f}"

    rules = [f"{t.rule} {versus(t.number)}" for t in r.trials if t.source == "rule"]
    searched = [(tune, k) for k, tune, _ in r.confirmed if tune is not None and r.trials[k].source != "rule"]
    best = max(searched)[1] if searched else None
    return ", ".join(rules) + ("; " if rules else "") + (
        "search –" if best is None else f"search {versus(best)} ({r.trials[best].source} trial {best})")


def _interval(values: dict | None, percent: bool = False) -> str:
    if not values or values.get("value") is None:
        return "–"
    form = share_text if percent else (lambda v: f"{v:+.3f}")  # a share: never above 100% ("all")
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
    rule = budget.get("rule_trial")
    tried_by = [(x, None) for x in budget["lengths"]] + [(x, rule) for x in budget.get("rule_lengths", [])]
    reached = min(((x, by) for x, by in tried_by if x["reached"]), key=lambda f: (f[0]["epochs"], f[1] is not None),
                  default=None)
    if reached is not None:
        x, by = reached
        wall = "" if x["wall_ratio"] is None else f", {x['wall_ratio']:.2f}x b's wall time"
        return (f"b's tune_acc reached at {x['multiple']:g}x the epochs ({x['epochs']})"
                f"{'' if by is None else f' by trial {by}'}{wall}")
    tried = [f"{x['multiple']:g}x: {x['tune_acc']:.3f}" for x in budget["lengths"] if x["tune_acc"] is not None]
    small = "–" if budget["small_tune_acc"] is None else f"{budget['small_tune_acc']:.3f}"
    return (f"b's tune_acc ({small}) not reached" +
            (f" ({', '.join(tried)})" if tried else ""))


def row(case: Case, found: dict, wall: float, runs: int, versus: str = "–", cost: str = "–") -> str:
    recipe = ", ".join(f"`{k}={v}`" for k, v in (found.get("recipe") or {}).items() if v is not None) or "–"
    trials = found.get("trials") or []
    number = found.get("recipe_trial")
    rule = trials[number].get("rule") if number is not None and number < len(trials) else None
    trial = "–" if number is None else f"trial {number}{f' (the {rule} rule)' if rule else ''}: {recipe}"
    verdict = found["verdict"] or "no verdict"
    if found["verdict"] == "recovered":
        verdict += ", shown" if found["shown"] else ", not shown" + (
            f" (about {found['seeds_needed']} seeds would show it)" if found.get("seeds_needed") else "")
    elif found["verdict"] == "undecided" and found.get("seeds_needed"):
        verdict += f" (about {found['seeds_needed']} seeds would decide it)"
    command = " ".join(f"`{o}`" for o in case.overrides if o not in QUIET)  # a code span each: lines wrap between
    gap = found.get("gap") or {}
    return (f"| {case.name}:<br>{command} | {_interval(found['drop'])} | {trial} | "
            f"{_interval(gap)} | {_interval(found.get('recovered'), percent=True)} | {versus} | {verdict} | "
            f"{_budget(found)} | {runs} | {cost} | {wall / 60:.1f} min |")


HEADER = ("| case: `+study=recover` with | drop v(b) − v(B), 95% interval | the recipe at B | v(b) − v(recipe) | share "
          "of the drop recovered | v(B) − v(b): each rule; the search's best | verdict | budget | runs | run-seconds "
          "(the runs' set-up to end, summed) | wall time |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |")


def main(argv: list[str] | None = None) -> int:
    return matrix.main(argv, __doc__.splitlines()[0], CASES, SMOKE,
                       lambda case, folder, before: row(case, *run_case(case, folder, before)), HEADER,
                       "recover-matrix", before=True)


if __name__ == "__main__":
    sys.exit(main())
