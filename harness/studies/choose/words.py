"""+study=choose in words: what the results table prints under a choice's runs."""
from __future__ import annotations

import json
import math

from harness.config.ramp import changes, label
from harness.studies.choose import check_words, ramps
from harness.studies.choose.answer import NOT_ENDED, edge, left_out
from harness.studies.choose.check_words import seconds
from harness.studies.choose.settings import RAMPS


def results_lines(found) -> list[str]:
    """The target and, at every batch size, the candidate it goes on with and its steps to the target per seed."""
    if found is None:
        return []
    if found.target is None:
        return [f"choose: {found.target_note}"]
    lines = [f"choose: target tune_acc {found.target:g} ({found.target_note})"]
    if found.answer is not None:
        lines.append(f"choose: {headline(found)}")
    for size in found.sizes:
        leader = found.leader(size)
        if leader is None:
            lines.append(f"  batch {size}: no run yet")
            continue
        steps = ", ".join(leader.steps_text(seed) for seed in found.seeds if seed in leader.steps)
        lines.append(f"  batch {size}: {leader.name} ({recipe_text(leader.recipe)}), steps to the target by seed: {steps}")
    return lines


def recipe_text(recipe: dict) -> str:
    """A recipe as its overrides, or what an empty one is."""
    return " ".join(f"{k}={v}" for k, v in recipe.items()) or "the command as it is"


FORMULA = ("a judging seed's time to the target is what its own run of the printed command recorded "
           "(seconds_to_target: from the fit's start, its first compiled call and every second between epochs "
           "included, the target checked once an epoch), each run alone on this machine in a process of its own; a "
           "seed that missed the target never reaches it (infinite), and a batch size's time is its median over the "
           "seeds that judge")
LINE_FORMULA = ("time to the target = C + r x S: S a judging seed's steps to the target (from its target run, rounded "
                "up to the end of the epoch in which it crossed: the printed command checks its target once an "
                "epoch), r the seconds a step takes and C the one-time cost (the first compiled call), both measured "
                "by running the printed command alone on this machine, the line through the checks of its first "
                "epochs (choose.time_epochs; on two seeds that judge, taken in turn over the seeds, so the machine's "
                "spread between runs is in the interval), with the seconds the harness spends between epochs (its "
                "per-epoch measurements, the row, the checkpoint) taken out; a seed that missed the target never "
                "reaches it (infinite), and a batch size's time is its median over the seeds that judge")


def formula(found) -> str:
    """How a time to the target was found: measured (FORMULA), or an older sweep's line (LINE_FORMULA)."""
    return LINE_FORMULA if found.rates else FORMULA


def schedule_text(recipe: dict) -> str:
    """A ramp's batch_schedule in words: "32→512 (growing after epoch 3)"; "8→80→128 (growing after epochs 12, 18;
    the rate falling after epoch 20)"."""
    phases = json.loads(str(recipe.get("batch_schedule", "[]")))
    return f"{label(phases)} ({changes(phases, 'growing after')})"


def candidate_text(t) -> str:
    """"batch 128 with the linear rule", "batch 8 as it is", "batch 8 with lr x2", "the proposed ramp 8→128 (growing
    after epoch 3)"."""
    return name_text(t.size, t.candidate.name, t.candidate.recipe)


RAMP_NAMES = {"ramp": "The proposed ramp", "smith": "Smith's ramp", "seesaw": "Seesaw's ramp"}


def name_text(size: int, name: str, recipe: dict) -> str:
    """A candidate at a batch size in words (candidate_text's)."""
    if name in RAMPS:
        return f"{RAMP_NAMES[name].replace('The ', 'the ', 1)} {schedule_text(recipe)}"
    if name == "as_is":
        return f"batch {size} as it is"
    base, _, factor = name.rpartition("_x")
    if base and factor:
        rule = "your command" if base == "as_is" else f"the {base} rule"
        return f"batch {size} with {rule}, its learning rate x{factor}"
    return f"batch {size} with the {name} rule"


def headline(found) -> str:
    """The answer in one sentence, naming the machine, and what its check found; without one, what happened to
    every batch size."""
    a = found.answer
    if a is None:
        if found.target is None:
            return found.target_note
        if not found.timing or any(status in NOT_ENDED for status in found.timing.values()):
            return (f"Steps to tune_acc {found.target:g} so far at every batch size; no batch size has been timed on "
                    "this machine yet.")
        reasons = "; ".join(f"batch {size} {why}" for size, why in left_out(found).items())
        return f"No batch size can be recommended for tune_acc {found.target:g}: {reasons}."
    where = f"On {found.machine}" if found.machine else "On this machine"
    if a.best is a.base:
        said = (f"{where}, no batch size reaches tune_acc {found.target:g} sooner than batch {a.base.size} as it is "
                f"({seconds(a.base.median)}, the median over the {len(found.judging)} seeds that judge).")
    else:
        own = "" if a.own_speedup is None else (
            f"; against batch {a.own.size} at its own best ({candidate_text(a.own).split(' with ', 1)[-1]}, "
            f"{seconds(a.own.median)}), {ratio_text(a.own_speedup)}" + _partly(found, a.own))
        said = (f"{where}, {candidate_text(a.best)} reaches tune_acc {found.target:g} soonest: "
                f"{seconds(a.best.median)} against {seconds(a.base.median)} for batch {a.base.size} as it is, "
                f"{speedup_text(a)}{own}.")
        if not keeps_validation(found):
            said += (f" But its validation accuracy at the target is {a.base.val_acc - a.best.val_acc:.3f} below "
                     f"batch {a.base.size}'s ({a.best.val_acc:.3f} against {a.base.val_acc:.3f}), more than "
                     f"choose.tolerance {found.tolerance:g}: it keeps the tuning accuracy, not the validation "
                     "accuracy.")
    return said + check_words.uncertain_text(found) + check_words.unchecked_text(found)


def _partly(found, t) -> str:
    factor = edge(t.candidate.name, found.lr_grid)
    return "" if factor is None else f" (tuned only partly: its best is its grid's edge, lr x{factor:g})"


def speedup_text(a) -> str:
    """"3.4x as fast [3.2, 3.5] (95% interval, 3 seeds)", or why it is no claim."""
    if math.isinf(a.speedup.value):
        return "which never reached the target on a seed that judges"
    return ratio_text(a.speedup)


def ratio_text(ratio) -> str:
    """A paired ratio of times as a speed-up with its interval, or why it is no claim."""
    interval = ratio.interval
    said = f"{ratio.value:.2g}x as fast"
    if not interval.claims:
        return f"{said} on one seed: no interval, so no claim that it is faster"
    bounds = f"[{interval.low:.2g}, {interval.high:.2g}] ({interval.label}, {interval.n} seeds)"
    if interval.below(1.0):
        return f"{said} {bounds}: the interval lies below 1, so it is shown slower"
    if interval.above(1.0):
        return f"{said} {bounds}"
    more = "" if ratio.seeds_to_show is None or ratio.seeds_to_show <= interval.n else (
        f"; about {ratio.seeds_to_show} judging seeds at this spread would (--add-seeds "
        f"{ratio.seeds_to_show - interval.n})")
    shown = "faster" if ratio.value >= 1 else "slower"  # the side its value leans to, which more seeds might show
    return f"{said} {bounds}: the interval reaches 1, so it is not shown {shown}{more}"


def seeds_line(found) -> str:
    """Which seeds chose and which judged."""
    chose, judged = found.choosing, found.judging
    if judged == chose:
        return (f"One seed ({chose[0]}) both chose each batch size's candidate and timed it: no interval, and no "
                "claim stands on it; seed=0,1,2,3 gives three seeds that judge.")
    return (f"Seed {chose[0]} chose each batch size's candidate; seed{'s' if len(judged) > 1 else ''} "
            f"{', '.join(map(str, judged))} judged them (the times, the speed-ups and the check), so the luck that "
            f"picked a candidate on seed {chose[0]} does not count in its favour.")


def answer_lines(found) -> list[str]:
    """What the section says under the headline, in order (findings.md's lines): the validation accuracy, then
    each group of `groups`."""
    return [line for line in [validation_text(found)] if line] + [line for _, lines in groups(found) for line in lines]


def groups(found) -> list[tuple[str, list[str]]]:
    """The reading below the verdict, under headings of its own: how the answer was found (which seeds chose and
    judged, what was cut to save runs), every batch size (who is just as fast, who was left out and why, a best at
    its grid's edge, the rule of thumb), the ramps, the check."""
    a = found.answer
    if found.target is None or (a is None and (not found.timing or any(s in NOT_ENDED for s in found.timing.values()))):
        return []
    sizes = []
    if a is not None and a.just_as_fast:
        sizes.append("Not shown slower than the answer (a paired interval of their times that reaches 1): "
                     f"{'; '.join(candidate_text(t) for t in a.just_as_fast)}.")
    if a is not None and a.speedup.left_out:
        seeds = [found.judging[i] for i in a.speedup.left_out]
        sizes.append(f"Batch {a.base.size} as it is missed the target on seed {', '.join(map(str, seeds))}: the "
                     "speed-up and its bound come from the other seeds.")
    for size, why in left_out(found).items():
        sizes.append(f"Batch {size}: {why}; not a candidate for the answer.")
    for t in [] if a is None else a.timed:
        partly = _partly(found, t)
        if partly and t is not a.base:
            sizes.append(f"{candidate_text(t)[0].upper()}{candidate_text(t)[1:]}: {partly.strip(' ()')}; a step "
                         "further was not tried, so its time may be an overestimate.")
    if a is not None and a.size != max(found.sizes):
        sizes.append(f"The answer is not the largest batch size ({max(found.sizes)}): every larger one took longer "
                     "to the target on this machine, or missed it.")
    if a is not None and a.thumb is not None:
        sizes.append(f"The rule of thumb (a batch of {32} or less): {candidate_text(a.thumb)}, "
                     f"{seconds(a.thumb.median)}" + ("." if a.thumb is a.best else
                                                     f", {a.thumb.median / a.best.median:.2g}x the answer's time."))
    out = [("How the answer was found", [seeds_line(found), *cost_lines(found)]), ("Every batch size", sizes),
           ("Ramps", ramp_lines(found) if a is not None else []),
           ("The check", [check_words.check_text(c, found.check_tolerance) for c in found.checks])]
    return [(heading, lines) for heading, lines in out if lines]


def validation_text(found) -> str | None:
    """The answer's validation accuracy where it reached the target beside b's as it is, and whether it is lower by
    more than choose.tolerance (None without both)."""
    a = found.answer
    if a is None or a.best is a.base or a.best.val_acc is None or a.base.val_acc is None:
        return None
    said = (f"Validation accuracy where the target was reached: {a.best.val_acc:.3f} at batch {a.size} against "
            f"{a.base.val_acc:.3f} at batch {a.base.size} as it is")
    if not keeps_validation(found):
        return said + (f", {a.base.val_acc - a.best.val_acc:.3f} lower: more than the tolerance {found.tolerance:g}, "
                       "so this answer keeps the tuning accuracy but not the validation accuracy.")
    return said + f" (within choose.tolerance {found.tolerance:g})."


def keeps_validation(found) -> bool:
    """The answer's validation accuracy at the target is not below b's as it is by more than choose.tolerance (true
    where either is unknown, or the answer is b)."""
    a = found.answer
    if a is None or a.best is a.base or a.best.val_acc is None or a.base.val_acc is None:
        return True
    return round(a.base.val_acc - a.best.val_acc, 6) <= found.tolerance


def cost_lines(found) -> list[str]:
    """What was cut to save runs: the cap every target run but b as it is had, each grid point raced out, and the
    timed runs' length."""
    lines = []
    epochs = found.time_epochs
    if epochs is not None and any(name not in RAMPS for _, name in found.rates):  # an older sweep's line
        lines.append(f"Each timed run of one batch size stopped after {epochs} epochs (choose.time_epochs), or at the target before: its line "
                     "needs only those checks; the check below reruns the printed command to the target.")
    if found.cap_samples is not None:
        lines.append(f"Every target run but batch {found.sizes[0]} as it is stopped without the target after "
                     f"{found.cap_samples:,} training samples (choose.cap_factor x the {found.b_samples:,} batch "
                     f"{found.sizes[0]} needed on its slowest baseline seed): a run stopped there missed it.")
    raced = [(c, seed) for size in found.sizes for c in found.candidates.get(size, []) for seed in found.seeds
             if c.raced_out(seed)]
    if raced:
        said = "; ".join(f"{name_text(c.size, c.name, c.recipe)}, at {c.stopped_at[seed]:,} samples"
                         for c, seed in raced)
        lines.append(f"Raced out (stopped once its training samples passed, by choose.race_margin, those of its "
                     f"batch size's leading candidate on the seed that chose, so it could not be the best; not a "
                     f"miss): {said}.")
    return lines


def _unswitched(made) -> str:
    """Where the switches cost more than they save, by how much."""
    if made is None or made.unswitched is None:
        return ""
    sizes, free, cost = made.unswitched
    each = ("each switch's new fit, its pipeline and compile" if made.switches_measured else
            "each switch the batch's one-time cost, as a sweep made before a switch's cost was measured charges it")
    return (f" (the fastest path through the accuracy levels, {'→'.join(map(str, sizes))}, would take "
            f"{seconds(free)} without its start and switches, which cost {seconds(cost)} (its first batch's start, "
            f"its first check's compile included, and {each}, from each batch size's own run), against {seconds(made.fixed[1])} for batch {made.fixed[0]} alone)")


def ramp_lines(found) -> list[str]:
    """What became of the ramps: the one proposed from the curves (or why none), Smith's (or why none), and each
    timed ramp against the fastest single batch size, paired by seed."""
    lines, made, a = [], found.proposal, found.answer
    if made is not None and made.phases and found.ramp_note:  # proposed, but not a run the study can make
        lines.append(f"The ramp proposed from seed {found.choosing[0]}'s curves, "
                     f"{'→'.join(str(size) for _, size in made.phases)}, was not run: {found.ramp_note}.")
    elif made is not None and made.phases:
        switches = ", ".join(f"{level:.3g}" for level in made.switches)
        lines.append(f"The ramp proposed from seed {found.choosing[0]}'s curves (each batch size's best: the time from "
                     f"one tuning accuracy to the next) switches at tune_acc {switches}; from them it would take "
                     f"{seconds(made.predicted)} against {seconds(made.fixed[1])} for batch {made.fixed[0]}, the "
                     "fastest single batch size there (assuming each batch size goes on from an accuracy as its own "
                     "run did: its own runs are what count)"
                     + (f"; {found.ramp_fitted}." if found.ramp_fitted else ".") + ramps.not_carried_text(found))
    elif found.ramp_note:
        lines.append(f"No ramp was proposed: {found.ramp_note}{_unswitched(made)}.")
    if found.smith_note:
        lines.append(f"Smith's rule gives no ramp here: it needs {found.smith_note}.")
    if found.seesaw_note:
        lines.append(f"Seesaw gives no ramp here: it needs {found.seesaw_note}.")
    for name, why in found.refused.items():
        lines.append(f"{RAMP_NAMES.get(name, name)} was not run: its runs cannot be planned on this command "
                     f"({why}).")
    for t, ratio in [] if a is None else a.ramps:
        text = f"{candidate_text(t)[0].upper()}{candidate_text(t)[1:]}"
        if ratio is None or a.fixed is None:
            lines.append(f"{text} missed the target on a seed that judges: not a candidate for the answer.")
            continue
        beat = "beat" if ratio.interval.above(1.0) else "did not beat"
        lines.append(f"{text} took {seconds(t.median)} against {seconds(a.fixed.median)} for "
                     f"{candidate_text(a.fixed)}, the fastest single batch size: it {beat} it, "
                     f"{ratio_text(ratio)}.")
    return lines
