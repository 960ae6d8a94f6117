"""choice.json, a +study=choose sweep's answer in the sweep folder: its fields named once, for the writer (the report,
which assesses the sweep: harness.report.html) and its readers (benchmarks, a user's scripts)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from harness.store.files import read_json, write_fields

CHOICE_FILE = "choice.json"  # in the sweep folder
FIELDS = {
    "target": "the tuning accuracy every run was stopped at (null: not set yet)",
    "target_note": "how it was set", "machine": "where the batch sizes were timed (2 CPU cores, TensorFlow)",
    "headline": "the answer in words", "formula": "how a time to the target is predicted",
    "sizes": "[{batch, candidate, recipe, steps, seconds_per_step, one_time_seconds, phase_seconds_per_step, "
             "throughput, times, prediction "
             "{low, high, level, n, method}, median, interval {low, high, level, n, method}, reached_all, "
             "val_acc_at_target}]: each batch size's best, timed alone (steps and times by seed in `seeds`' order; "
             "null: a seed that missed the target; seconds_per_step and throughput: its seconds and samples to the "
             "target over its steps, everything included, the median over seeds; one_time_seconds: an older sweep's "
             "line only; phase_seconds_per_step: a ramp's seconds a step at each of its batches, each one's first "
             "epoch included, the median over seeds, for the batches its runs reached before the target (null: not a "
             "ramp); prediction: where a rerun on a new seed "
             "should fall)",
    "seeds": "the seeds that judged (every seed but the one that chose), in the order of each size's steps and times",
    "chose": "the seed that chose each batch size's candidate (its steps and times are not in any comparison)",
    "answer": "{batch, candidate, recipe, command, base_command (b as it is, printed the same way), speedup {value, low, "
              "high, level, n, method, left_out}, "
              "own_speedup {candidate, value, low, high, level, n, method}}: the least median time among the batch "
              "sizes that reached the target on every judging seed; b as it is's time over its, paired by seed "
              "(left_out: seeds where b missed), and b at its own best's (null where that is b as it is or the "
              "answer); null before the timing",
    "left_out": "{batch: why}: every batch size that is not a candidate for the answer, with its reason",
    "just_as_fast": "[{batch, candidate}]: the timed bests not shown slower than the answer (the paired interval of "
                    "their times reaches 1)",
    "rule_of_thumb": "{batch, candidate, median}: the fastest batch of 32 or less (null: none reached the target)",
    "checks": "[{batch, candidate, seed, steps, measured, predicted, within, interval {low, high, level, n, method}, "
              "inside, outcome}]: the printed command rerun alone on a seed that neither chose nor judged (measured: "
              "the seconds to the target it recorded), beside the time predicted from the judging seeds' own runs "
              "(their geometric mean); within: inside check_tolerance; interval: where a rerun should fall (a t "
              "prediction interval on their logs); inside: it did; outcome: reached, missed, diverged or failed",
    "check_tolerance": "how far (relative) a check may lie from its prediction (choose.check_tolerance)",
    "uncertain": "a check missed the target, diverged or failed, or fell outside check_tolerance or its prediction "
                 "interval: the headline says the time is uncertain on this machine",
    "answer_checked": "whether the check reran the answer (false: the answer moved once seeds were added after the "
                      "check; null: no check)",
    "ramps": "{proposed {phases [[start_epoch, batch]], switches, predicted, fixed {batch, predicted}} or null, "
             "why_not_proposed, fitted (what was changed to fit the command), not_run {ramp: why its runs could not "
             "be planned}, not_carried {batch: {key: value}} (what a later phase's best sets that its phase cannot "
             "hold: it runs with the first phase's recipe), smith_why_not, seesaw_why_not, timed [{candidate, batch_schedule, median, "
             "speedup_over_fixed {value, low, high, level, n, method} or null}]}: the ramp proposed from the choosing "
             "seed's curves (predicted from them), Smith's rule's and Seesaw's, and each ramp timed against the "
             "fastest single batch size, paired by seed",
    "lines": "the rest of the reading in words",
}


def write(sweep_dir: Path, values: dict[str, Any]) -> None:
    write_fields(Path(sweep_dir) / CHOICE_FILE, values, FIELDS)


def read(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep's choice.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(sweep_dir) / CHOICE_FILE)


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def values(found) -> dict[str, Any]:
    """choice.json's content from a reading (harness.studies.choose.reading.Choice), FIELDS in order."""
    from harness.studies.choose import words
    from harness.studies.choose.answer import left_out

    a = found.answer
    sizes = [] if a is None else [
        {"batch": t.size, "candidate": t.candidate.name, "recipe": t.candidate.recipe,
         "steps": [_number(s) for s in t.steps], "seconds_per_step": _number(t.seconds_per_step),
         "one_time_seconds": None if t.one_time is None else _number(t.one_time),
         "phase_seconds_per_step": [_number(v) for v in t.phase_seconds_per_step] if t.ramp else None,
         "throughput": _number(t.throughput), "times": [_number(v) for v in t.times],
         "prediction": t.prediction.as_json(),
         "median": _number(t.median), "interval": t.interval.as_json(), "reached_all": t.reached_all,
         "val_acc_at_target": t.val_acc} for t in a.timed]
    return {"target": found.target, "target_note": found.target_note, "machine": found.machine,
            "headline": words.headline(found), "formula": words.formula(found), "sizes": sizes, "seeds": found.judging,
            "chose": found.choosing,
            "answer": None if a is None else {
                "batch": a.size, "candidate": a.name, "recipe": a.recipe, "command": found.command,
                "base_command": found.base_command,
                "speedup": {"value": _number(a.speedup.value), **a.speedup.interval.as_json(),
                            "left_out": [found.judging[i] for i in a.speedup.left_out]},
                "own_speedup": None if a.own_speedup is None else {
                    "candidate": a.own.candidate.name, "value": _number(a.own_speedup.value),
                    **a.own_speedup.interval.as_json()}},
            "left_out": {str(size): why for size, why in left_out(found).items()},
            "just_as_fast": [] if a is None else [{"batch": t.size, "candidate": t.candidate.name}
                                                  for t in a.just_as_fast],
            "rule_of_thumb": None if a is None or a.thumb is None else {
                "batch": a.thumb.size, "candidate": a.thumb.candidate.name, "median": _number(a.thumb.median)},
            "checks": [{"batch": c.size, "candidate": c.name, "seed": c.seed, "steps": _number(c.steps),
                        "measured": c.measured, "predicted": _number(c.predicted), "within": c.within,
                        "interval": None if c.interval is None else c.interval.as_json(), "inside": c.inside,
                        "outcome": c.outcome} for c in found.checks],
            "check_tolerance": found.check_tolerance,
            "uncertain": any(c.fails for c in found.checks),
            "answer_checked": None if a is None or not found.checks else
            any(c.size == a.size and c.name == a.name for c in found.checks),
            "ramps": _ramps(found),
            "lines": words.answer_lines(found)}


def _ramps(found) -> dict[str, Any]:
    made, a = found.proposal, found.answer
    return {"proposed": None if made is None or not made.phases else {
                "phases": [list(phase) for phase in made.phases], "switches": made.switches,
                "predicted": _number(made.predicted), "fixed": {"batch": made.fixed[0],
                                                                "predicted": _number(made.fixed[1])}},
            "why_not_proposed": found.ramp_note or None, "smith_why_not": found.smith_note or None,
            "seesaw_why_not": found.seesaw_note or None,
            "fitted": found.ramp_fitted or None, "not_run": dict(found.refused),
            "not_carried": {str(size): keys for size, keys in found.ramp_not_carried.items()},
            "timed": [] if a is None else [
                {"candidate": t.candidate.name, "batch_schedule": t.candidate.recipe.get("batch_schedule"),
                 "median": _number(t.median), "speedup_over_fixed": None if ratio is None else {
                     "value": _number(ratio.value), **ratio.interval.as_json()}} for t, ratio in a.ramps]}
