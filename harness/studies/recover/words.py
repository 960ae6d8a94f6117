"""+study=recover's headline and the words it is made of (a recipe, a share, the budget), for a reading
(harness.studies.recover.reading.Recovery) whatever round it has reached; notes.py says the rest under it. Numbers
in, words out: each sentence claims only what the rounds that ended show."""
from __future__ import annotations

import json

from typing import Any

from harness.assess import paired
from harness.config.ramp import changes, label
from harness.assess.verdicts import CHANCE_MARGIN
from harness.studies.recover import verdict as recovery_verdict
from harness.studies.recover.verdict import RECOVERED, Verdict


def _recipe_parts(recipe: dict[str, Any], peak_lr: float | None = None, first_moment: str = "momentum",
                  lr_first: bool = False) -> str:
    """A recipe's values as a researcher says them: "peak lr 0.028 (27.9x your lr), 0.45 epochs of warm-up,
    momentum 0.970, weight decay 0.00065 and label smoothing 0.11" (the command line has them exactly);
    `lr_first`: "27.9x your lr, a peak of 0.028", to sit inside parentheses."""
    get = recipe.get
    parts = []
    if get("batch_schedule"):  # a ramp: its batches and where they change, each phase's lr on the command line
        phases = json.loads(str(get("batch_schedule")))
        parts.append(f"batches {label(phases)} ({changes(phases, 'growing after')})")
    if get("lr_factor") is not None and lr_first:
        parts.append(f"{get('lr_factor'):.3g}x your lr" + (f", a peak of {peak_lr:.2g}" if peak_lr is not None
                                                            else ""))
    elif get("lr_factor") is not None:
        parts.append(f"peak lr {peak_lr:.2g} ({get('lr_factor'):.3g}x your lr)" if peak_lr is not None
                     else f"{get('lr_factor'):.3g}x your lr")
    if get("warmup_epochs"):
        parts.append(f"{get('warmup_epochs'):.2g} epoch{'' if get('warmup_epochs') == 1 else 's'} of warm-up")
    for key, name, form in (("momentum", first_moment, ".3f"), ("beta_2", "beta_2", ".4g"),
                            ("epsilon", "epsilon", ".2g"), ("weight_decay", "weight decay", ".2g"),
                            ("label_smoothing", "label smoothing", ".2g"),
                            ("model.bn_momentum", "batch-norm momentum", ".3f")):
        if get(key) is not None:
            parts.append(f"{name} {get(key):{form}}")
    if get("model.ghost_batch_size") is not None:
        parts.append(f"ghost batch norm over {get('model.ghost_batch_size')}")
    if get("precise_bn") is not None:
        parts.append(f"batch-norm statistics recomputed on {get('precise_bn'):,} samples before each evaluation")
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + (parts[-1] if parts else "")


def recipe_words(recipe: dict[str, Any], peak_lr: float | None = None) -> str:
    """A searched recipe as a researcher says it: "adamw with a cosine schedule, peak lr 0.028 (27.9x your lr),
    ..." (_recipe_parts)."""
    get = recipe.get
    schedule = {"constant": "a constant learning rate", None: "your schedule"}.get(get("lr_schedule"),
                                                                                  f"a {get('lr_schedule')} schedule")
    listed = _recipe_parts(recipe, peak_lr)
    return f"{get('optimizer') or 'your optimizer'} with {schedule}" + (f", {listed}" if listed else "")


def described(trial) -> str:
    """A trial as a researcher says it, with its number: a rule by its name ("the linear rule (16x your lr, a peak
    of 0.016, and 1 epoch of warm-up; trial 16)"), a searched recipe by its values ("adamw with ... (trial 3)")."""
    if trial.source == "rule":
        first = "beta_1" if trial.rule == "adam_sde" else "momentum"
        parts = _recipe_parts(trial.recipe, trial.peak_lr, first, lr_first=True)
        return f"the {trial.rule} rule ({parts}; trial {trial.number})"
    return f"{recipe_words(trial.recipe, trial.peak_lr)} (trial {trial.number})"



def headline(r) -> str:
    done = [t for t in r.trials if t.tune_acc is not None]
    opening = "The search and its guided trials" if any(
        t.source == "guided" and t.tune_acc is not None for t in r.trials) else "The search"
    if r.best is None:
        return (f"The search at batch {r.large_batch} has no finished trial yet ({len(done)} of {len(r.trials)}): "
                "nothing to rank.")
    if r.verdict is None:
        best = r.trials[r.best]
        ref = r.reference
        against = (f"; as they are, batch {r.small_batch} reached {ref['b']:.3f} and batch {r.large_batch} "
                   f"{ref['B']:.3f}" if ref["b"] is not None and ref["B"] is not None else "")
        return (f"{opening}: of {len(done)} recipes at batch {r.large_batch} within {r.epochs} epochs (seed "
                f"{r.seeds[0]}), the best on the tuning slice reached tune_acc {best.tune_acc:.3f}{against}. It is "
                f"{described(best)}. Not yet confirmed on other seeds or compared on "
                "validation: no verdict on recovery.")
    return _at_chance(r) + _verdict_headline(r)


def _at_chance(r) -> str:
    """b as it is learned nothing (its val_acc within CHANCE_MARGIN of chance): said first, since keeping its
    accuracy then says little; recover.tune_small=true gives b the same search."""
    v = r.verdict
    if r.small_recipe is not None or r.chance is None or v.small.value is None \
            or v.small.value >= r.chance + CHANCE_MARGIN:
        return ""
    return (f"Batch {r.small_batch} as it is learned nothing here (val_acc {v.small.value:.3f}, chance "
            f"{r.chance:.3f}), so keeping its accuracy says little: recover.tune_small=true tunes batch "
            f"{r.small_batch} too. ")


def _verdict_headline(r) -> str:
    recipe = r.trials[r.recipe]
    opening = f"At batch {r.large_batch} and {r.epochs} epochs, {described(recipe)}"
    return _opened(r, opening) + _nothing_better(r) + left_out_text(r)


def left_out_text(r) -> str:
    """" Seed 5 is left out of the verdict: the recipe (trial 27) has no final validation accuracy there." for every
    judging seed the verdict could not pair, else ""."""
    if not r.left_out:
        return ""
    said = "; ".join(f"seed {seed}: {whose}" for seed, whose in sorted(r.left_out.items()))
    return (f" Left out of the verdict, a judging seed whose runs did not all end with a validation accuracy "
            f"(not finished, failed or diverged): {said}.")


def _nothing_better(r) -> str:
    """Where the recipe is a rule and the search ran: that it found nothing better by more than the tolerance."""
    searched = [t for t in r.trials if t.source != "rule" and t.tune_acc is not None]
    if r.trials[r.recipe].source != "rule" or not searched:
        return ""
    return (f" The search ({len(searched)} recipes) found none better than the rule by more than recover.tolerance "
            f"({r.verdict.tolerance:g}) in mean tune_acc.")


def _opened(r, opening: str) -> str:
    v = r.verdict
    seeds = "one seed: indicative" if v.indicative else f"{v.gap.n} seeds"
    if v.kind == RECOVERED:
        above = "" if v.gain is None or v.gain.value is None or v.gain.value <= 0 else \
            f", {_signed(v.gain)} above batch {r.small_batch}"
        return (f"{opening} keeps {_small(r, 'validation accuracy')}: {_with_interval(v.recipe)} vs "
                f"{v.small.value:.3f} ({seeds}){above}: recovered{_shown(v)}.")
    if v.kind == recovery_verdict.UNDECIDED:
        more = "" if v.seeds_needed is None else f"; about {v.seeds_needed} seeds would decide it"
        if v.gap.value <= v.tolerance:  # within on average, but the interval reaches past it: no claim either way
            return (f"{opening} keeps {_small(r, 'validation accuracy')} on average, a gap of {_signed(v.gap)} "
                    f"({seeds}) against the tolerance {v.tolerance:g}, but its 95% interval reaches beyond the "
                    f"tolerance: undecided at {v.gap.n} seeds{more}; {_budget_sentence(r)}.")
        return (f"{opening} falls short of {_small(r, 'validation accuracy')} by {_signed(v.gap)} ({seeds}), more "
                f"than the tolerance {v.tolerance:g} on average while its 95% interval reaches within it: undecided "
                f"at {v.gap.n} seeds{more}; {_budget_sentence(r)}.")
    if v.share is None:  # B as it is lost nothing to b: nothing to recover, and the recipe is further behind
        return (f"{opening} falls short of {_small(r, 'validation accuracy')} by {v.gap.value:.3f} ({seeds}), while "
                f"batch {r.large_batch} as it is lost nothing to it ({v.drop.value:+.3f}): not recovered; "
                f"{_budget_sentence(r)}.")
    share = share_text(v.share) + (
        "" if v.indicative else f" [{share_text(v.share_low)}, {share_text(v.share_high)}]"
        if v.share_low is not None else " (no interval: the drop itself is not shown)")
    kind = "partly recovered" if v.kind == recovery_verdict.PARTLY else "not recovered"
    # worse than B as it is only where the numbers show it: the interval (one seed: the value) below 0
    worse = v.share is not None and v.share < 0 and (v.share_high < 0 if v.share_high is not None else v.indicative)
    does = (f"does worse than batch {r.large_batch} as it is ({share} of the drop of {v.drop.value:.3f} recovered"
            if worse else f"recovers {share} of the drop of {v.drop.value:.3f} (")
    return f"{opening} {does}{'; ' if worse else ''}{seeds}): {kind}; {_budget_sentence(r)}."


def _small(r, what: str) -> str:
    """b's `what`, as B is compared with it: b as it is, or b with its own recipe (recover.tune_small)."""
    if r.small_recipe is None:
        return f"batch {r.small_batch}'s {what}"
    return f"the {what} of batch {r.small_batch} with its own recipe (trial {r.small_recipe})"


def share_text(share: float | None) -> str:
    """A share of the drop recovered: a percentage, never above 100% ("all": the recipe lies above b, which the gain
    over b says by how much)."""
    if share is None:
        return "–"
    return "all" if share >= 1.0 else f"{share:.0%}"


def _signed(e: paired.Estimate) -> str:
    return f"{e.value:+.3f}" if e.low is None else f"{e.value:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"


def _with_interval(e: paired.Estimate) -> str:
    return f"{e.value:.3f}" if e.low is None else f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _shown(v: Verdict) -> str:
    gap = f"a gap of {v.gap.value:+.3f} against the tolerance {v.tolerance:g}"
    if v.indicative:
        return f", {gap}; one seed cannot show it"
    return (f", {gap}, the upper end of its 95% interval (a one-sided 97.5% bound) {v.gap.high:+.3f} within it too: "
            "shown")


def _budget_sentence(r) -> str:
    b, big = r.small_batch, r.large_batch
    if not r.budget_asked:
        return "the epochs batch {big} would need were not measured (recover.budget=false)".format(big=big)
    rule = r.budget_rule_trial
    tried = [(length, None) for length in r.budget] + [(length, rule) for length in r.budget_rule]
    reached = min(((length, by) for length, by in tried if length.reached), default=None,
                  key=lambda found: (found[0].epochs, found[1] is not None))
    if reached is not None:
        length, by = reached
        wall = ("" if length.wall_ratio is None
                else f", {length.wall_ratio:.1f}x batch {b}'s wall time on this machine")
        return (f"batch {big} reaches {_small(r, 'tuning accuracy')} with {length.multiple:g}x the epochs "
                f"({length.epochs}){'' if by is None else ' with ' + rule_words(r, by)}{wall}")
    if not r.budget:
        return f"the epochs batch {big} would need are not measured yet"
    last = r.budget[-1]
    longest = round(big / b * r.epochs)
    tried_by = "" if rule is None else f" with the recipe or with {rule_words(r, rule)}"
    if last.epochs >= longest:
        return (f"batch {big} did not reach {_small(r, 'tuning accuracy')}{tried_by} within {last.multiple:g}x the "
                f"epochs ({last.epochs}: as many updates as batch {b} makes in {r.epochs})")
    return (f"batch {big} had not reached {_small(r, 'tuning accuracy')}{tried_by} at {last.multiple:g}x the epochs; "
            "longer runs next")


def rule_words(r, number: int) -> str:
    return f"the {r.trials[number].rule} rule (trial {number})"
