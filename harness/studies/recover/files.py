"""recovery.json, a +study=recover sweep's reading in the sweep folder: its fields named once, for the writer (the
report, which assesses the sweep: harness.report.html) and its readers (benchmarks, a user's scripts)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.store.files import read_json, write_fields

RECOVERY_FILE = "recovery.json"  # in the sweep folder
FIELDS = {
    "small_batch": "b, the smallest global batch of the command", "large_batch": "B, the largest",
    "epochs": "E, the command's epochs: every trial trains within them",
    "rounds": "the rounds read, every job of each ended: 1, the reference and the search; then one a rung "
              "(recover.rungs); then the guided round (recover.guided > 0); then the confirmation; then the judging "
              "on fresh seeds (recover.judge > 0) and the verdict; then the budget",
    "chose": "the seeds that chose the recipe: the search's (the first) and the confirmation's",
    "judged": "the seeds the verdict pairs: recover.judge fresh ones, run for the purpose (an older sweep's: those "
              "that chose)",
    "left_out": "{seed: whose run}: a judging seed the verdict could not pair, and whose run there has no final "
                "validation accuracy (not finished, failed or diverged)",
    "headline": "the reading in words",
    "drop": "{value, low, high}: v(b) - v(B) as they are on validation, mean over paired seeds, 95% interval",
    "reference": "{b, B}: tune_acc of b and of B as they are, at the search's seed",
    "trials": "[{trial, source, rule, recipe, status, tune_acc, rungs, cut_at}]: the Sobol points in order, then "
              "the rules, then the guided round's (source: sobol, rule or guided; rule: its name, "
              "harness.config.rules; recipe: {key: value}, null keeps the command's; status: its furthest run's, "
              "paused at a rung; rungs: a Sobol trial's {epoch: tune_acc} at each rung it reached (recover.rungs); "
              "cut_at: the rung where the better part went on without it, or null)",
    "best": "the trial with the best tune_acc at the search's seed (its index in trials), or null",
    "confirmed": "[{trial, tune_acc, seeds}]: the trials round 2 ran at every seed, their mean tune_acc",
    "small_trials": "[{trial, recipe, status, tune_acc}]: b's own search (recover.tune_small), else []",
    "small_recipe_trial": "b's confirmed recipe (its index in small_trials), what B is compared with; null: b as "
                          "it is",
    "recipe_trial": "the confirmed trial with the best mean tune_acc: the recipe (null before round 2)",
    "recipe": "its recipe {key: value}",
    "verdict": "recovered, undecided, partly or not_recovered (null until judged): by the 95% interval of v(b) - "
               "v(recipe) on the judging seeds against the tolerance (harness.studies.recover.verdict)",
    "shown": "recovered: the whole 95% interval of v(b) - v(recipe) within the tolerance (one seed: false)",
    "gap": "{value, low, high, tolerance}: v(b) - v(recipe) on validation over paired seeds, 95% interval",
    "gain": "{value, low, high}: v(recipe) - v(b) on validation over paired seeds, 95% interval: how far the recipe "
            "lies above b (below it where negative)",
    "recovered": "{value, low, high}: the share of the drop the recipe recovers, Fieller's 95% interval (null: "
                 "unbounded, or one seed)",
    "seeds_needed": "undecided: about how many judging seeds would decide it",
    "more_seeds": "undecided: the command that adds the judging seeds that would decide it to the sweep (null "
                  "otherwise)",
    "budget": "{asked, small_tune_acc, reached_at_epochs, lengths [{epochs, multiple, tune_acc, runs, reached, "
              "wall_ratio}], rule_trial, rule_lengths}: the recipe at longer runs against b's tuning accuracy, and "
              "beside a recipe that is not a rule the best confirmed rule (rule_trial, its lengths alike; null, [])",
    "importance": "{trials, r2_oob, keys [{key, mean, sd}], at_epoch}: each knob's permutation importance for "
                  "tune_acc over the finished Sobol trials (in rungs: at the first rung, at_epoch; a random "
                  "forest's; sd: over forests and permutations), or null",
    "command": "the recipe (before round 2, the best trial) as a command line at B",
    "notes": "how to read it, and what has not run yet",
}


def write(sweep_dir: Path, values: dict[str, Any]) -> None:
    write_fields(Path(sweep_dir) / RECOVERY_FILE, values, FIELDS)


def read(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep's recovery.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(sweep_dir) / RECOVERY_FILE)


def values(r) -> dict[str, Any]:
    """recovery.json's content from a reading (harness.studies.recover.reading.Recovery), FIELDS in order."""
    drop = r.drop
    trials = [{"trial": t.number, "source": t.source, "rule": t.rule, "recipe": t.recipe, "status": t.status,
               "tune_acc": t.tune_acc, "rungs": {str(e): acc for e, acc in t.rungs.items()}, "cut_at": t.cut_at}
              for t in r.trials]
    return {"small_batch": r.small_batch, "large_batch": r.large_batch, "epochs": r.epochs,
            "headline": r.headline, "drop": {"value": None if drop is None else drop.value,
                                             "low": None if drop is None else drop.low,
                                             "high": None if drop is None else drop.high},
            "reference": r.reference, "trials": trials,
            "best": r.best, "command": r.command, "notes": r.notes, "rounds": r.rounds, "chose": r.seeds,
            "judged": r.judged, "left_out": {str(seed): whose for seed, whose in r.left_out.items()},
            "confirmed": [{"trial": k, "tune_acc": tune, "seeds": n} for k, tune, n in r.confirmed],
            "small_trials": [{"trial": t.number, "recipe": t.recipe, "status": t.status, "tune_acc": t.tune_acc}
                             for t in r.small_trials],
            "small_recipe_trial": r.small_recipe,
            **_verdict(r), "budget": _budget(r), "importance": _importance(r.importance)}


def _verdict(r) -> dict[str, Any]:
    v = r.verdict
    recipe = None if r.recipe is None else r.trials[r.recipe].recipe
    if v is None:
        return {"verdict": None, "shown": False, "recipe_trial": r.recipe, "recipe": recipe}
    gain = v.gain
    return {"verdict": v.kind, "shown": v.shown, "recipe_trial": r.recipe, "recipe": recipe,
            "gap": {"value": v.gap.value, "low": v.gap.low, "high": v.gap.high, "tolerance": v.tolerance},
            "gain": {"value": gain.value, "low": gain.low, "high": gain.high},
            "recovered": {"value": v.share, "low": v.share_low, "high": v.share_high},
            "seeds_needed": v.seeds_needed, "more_seeds": r.more_seeds}


def _budget(r) -> dict[str, Any]:
    reached = next((length.epochs for length in r.budget if length.reached), None)
    return {"asked": r.budget_asked, "small_tune_acc": r.small_tune, "reached_at_epochs": reached,
            "lengths": _lengths(r.budget), "rule_trial": r.budget_rule_trial, "rule_lengths": _lengths(r.budget_rule)}


def _lengths(lengths) -> list[dict[str, Any]]:
    return [{"epochs": x.epochs, "multiple": x.multiple, "tune_acc": x.tune_acc, "runs": x.runs, "reached": x.reached,
             "wall_ratio": x.wall_ratio} for x in lengths]


def _importance(found) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"trials": found.trials, "r2_oob": found.r2_oob,
            "keys": [{"key": i.key, "mean": i.mean, "sd": i.sd} for i in found.keys], "at_epoch": found.at_epoch}
