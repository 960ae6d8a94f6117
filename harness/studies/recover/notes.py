"""+study=recover's notes under the headline: how the trials were ranked and the recipe chosen, which seeds chose
and which judged, what has not run yet, the batch norm the rules set. Numbers in, words out."""
from __future__ import annotations

from typing import Any

from harness.studies.recover import settings
from harness.studies.recover.words import recipe_words


def seeds_note(r) -> str:
    """Which seeds chose the recipe and which judged it."""
    plural = "s" if len(r.seeds) > 1 else ""
    return (f"Seed{plural} {', '.join(map(str, r.seeds))} chose the recipe (the search on seed {r.seeds[0]}"
            + (", the confirmation on the others" if len(r.seeds) > 1 else "") + f"); seed"
            f"{'s' if len(r.judged) > 1 else ''} {', '.join(map(str, r.judged))}, run for the purpose, judged it: the "
            "verdict pairs only them, so the luck that chose the recipe does not count in its favour.")


def rungs_note(r, plan: dict[str, Any]) -> list[str]:
    """What the rungs cut, once they have: where the Sobol trials were compared, how many went on, which stopped."""
    rungs, epochs = plan.get("rungs") or [], plan["epochs"]
    cut = [t for t in r.trials if t.cut_at is not None]
    if not rungs or not cut:
        return []
    searched = [t for t in r.trials[:len(plan["trials"])] if t.source == "sobol"]
    at = ", ".join(f"{sum(t.cut_at == e for t in cut)} at epoch {e}" for e in rungs if any(t.cut_at == e for t in cut))
    whole = sum(bool(t.rungs) and not t.paused for t in searched)  # reached a rung without pausing
    paused = (f" {whole} of them ran whole: a run pauses only where its set-up and compile, which its continuation "
              "pays again, take less than its epochs left would (pause_when=cheaper), and running whole changes "
              "none of its numbers nor which trials go on." if whole else "")
    return [f"The search ran in rungs (successive halving, recover.rungs): its {len(searched)} Sobol trials were "
            f"compared on tune_acc at epoch{'s' if len(rungs) > 1 else ''} {', '.join(map(str, rungs))} of {epochs}, "
            "the same fraction of every trial's planned steps, and the better part went on, from its checkpoint where "
            f"it had paused.{paused} {len(cut)} were cut ({at}): trial{'s' if len(cut) > 1 else ''} "
            f"{', '.join(str(t.number) for t in cut)}, never confirmed or told to the guided round as finished. A "
            "trial's tune_acc midway is not its final one (a schedule that decays late gains most at the end), so a "
            "cut trial might have ended higher. The rules, the guided trials and the confirmations ran whole."]


def notes(r, plan: dict[str, Any]) -> list[str]:
    b, big = r.small_batch, r.large_batch
    notes = [f"Every trial is ranked by its final tune_acc on the held-out tuning slice (the same samples in every "
             f"run); the validation set, on which batch {b} and batch {big} are compared, plays no part in the "
             "ranking or in choosing the recipe.", *rungs_note(r, plan)]
    if r.verdict is None and r.small_trials and r.rounds >= 1 and all(t.tune_acc is None for t in r.small_trials):
        notes.append(f"Batch {b}'s own search (recover.tune_small) has no finished trial: there is nothing to compare "
                     f"batch {big}'s recipe with, so no later round runs.")
    elif r.verdict is None:
        notes.append(f"One seed per trial: a trial's rank carries its seed's noise. The next rounds confirm the best "
                     f"on the other seeds, paired with batch {b}'s, and measure the epochs batch {big} needs when "
                     "none recovers its accuracy; they have not run yet.")
    else:
        v = r.verdict
        total = len(r.seeds)
        confirmed = ", ".join(f"trial {k} ({_rule_of(r, k)}{'–' if tune is None else f'{tune:.3f}'} over {total} "
                              "seeds" + ("" if n == total else f", {total - n} failed or diverged, counted as 0")
                              + ")" for k, tune, n in r.confirmed)
        notes.append(f"Confirmed on every seed: {confirmed}; {_chosen(r, r.confirmed)}." if r.confirmed else
                     f"One seed: trial {r.recipe} is the recipe unconfirmed ({_chosen(r, [])}), and the verdict is "
                     "indicative.")
        judged_apart = r.judged != r.seeds  # an older sweep judged on the seeds that chose: said as it was
        if judged_apart:
            notes.append(seeds_note(r))
        if r.more_seeds is not None:
            notes.append(f"To decide it, about {v.seeds_needed} seeds judging, {len(r.judged)} so far: this runs b, "
                         f"B as it is and the recipe on the seeds it adds, in this folder (the search does not run "
                         f"again), and the verdict reads every seed: {r.more_seeds}" if judged_apart else
                         f"To decide it, the same study on {v.seeds_needed} seeds (a sweep of its own: the search runs "
                         f"again, and the verdict reads every seed): {r.more_seeds}")
        if not v.drop_shown:
            notes.append(f"As they are, no drop of batch {big} against batch {b} was shown over these seeds; the "
                         f"recipe is still compared with batch {b}.")
        if r.small_recipe is None:
            notes.append(f"Batch {b} ran as the command set it (recover.tune_small=false): a recipe searched for "
                         f"batch {big} only, against batch {b} untuned.")
        else:
            small = r.small_trials[r.small_recipe]
            notes.append(f"Batch {b} got the same search (recover.tune_small=true): its own best confirmed recipe, "
                         f"trial {r.small_recipe} ({recipe_words(small.recipe, small.peak_lr)}), is what batch "
                         f"{big}'s is compared with, on validation and in the budget; the drop above is between the "
                         "two as they are.")
        if not settings.recorded(plan).probes:
            notes.append("The trials' runs left the probes out (recover.probes=false): the sharpness, noise and "
                         f"distance the report reads are those of batch {b} and batch {big} as they are.")
    if r.drop is not None and r.drop.value is not None:
        d = r.drop
        interval = ("" if d.low is None else " (identical at every seed)" if d.identical
                    else f" [{d.low:+.3f}, {d.high:+.3f}] (95% interval)")
        notes.insert(0, f"As they are, batch {big} lost {d.value:+.3f}{interval} of val_acc to batch {b}, paired "
                        f"over {d.n} seed(s).")
    notes += _batch_norm_notes(r, plan)
    notes += [f"{key}: not searched, since it applies to {why}." for key, why in plan.get("left_out", {}).items()]
    notes += [f"The {t.rule} rule's values were clipped: {'; '.join(t.clipped)}." for t in r.trials if t.clipped]
    notes += [f"The {name} rule was not run: it applies to {why}." for name, why in
              plan.get("rules_left_out", {}).items()]
    return notes


def _batch_norm_notes(r, plan: dict[str, Any]) -> list[str]:
    """What the plan found of the model's batch norm, and the EMA rule's momentum the rules took from it."""
    found = plan.get("batch_norm")
    if not found or not found.get("rho"):
        return []
    rho, k = found["rho"], r.large_batch / r.small_batch
    layers = f"{found['layers']} batch-norm layer{'' if found['layers'] == 1 else 's'}"
    source = "the command's model.bn_momentum" if found.get("given") else (
        "their momentum" if len(found["momenta"]) == 1 else "the largest of their momenta " + ", ".join(
            f"{m:g}" for m in found["momenta"]))
    rules = [t for t in r.trials if t.source == "rule" and t.recipe.get("model.bn_momentum") is not None]
    others = "other " if any(t.rule == "precise_bn" for t in r.trials) else ""
    used = rules[0].recipe["model.bn_momentum"] if rules else None
    clipped = plan["sources"][rules[0].number].get("clipped", []) if rules else []  # as the plan recorded the rule
    floored = any("batch-norm momentum" in c for c in clipped)
    scaled = "" if not rules else (
        f" Every {others}rule sets the batch-norm momentum by the EMA rule (Busbridge et al. 2023): the moving "
        f"statistics average over steps, and batch {r.large_batch} takes {k:g}x fewer, so rho_b^{k:g} = {rho ** k:.4g}"
        + (f" would keep their horizon in samples; it is kept at the floor {used:g}, an average over about "
           f"{1 / (1 - used):.2g} steps." if floored else " keeps their horizon in samples."))
    return [f"The model has {layers}; rho_b = {rho:g} ({source}).{scaled}"]


def _rule_of(r, number: int) -> str:
    trial = r.trials[number]
    return f"the {trial.rule} rule, " if trial.source == "rule" else ""


def _chosen(r, confirmed: list[tuple[int, float | None, int]]) -> str:
    """Why trial r.recipe is the recipe: the best mean tune_acc, or the simplest within recover.tolerance of it."""
    means = {k: tune for k, tune, _ in confirmed if tune is not None} or \
        {t.number: t.tune_acc for t in r.trials if t.tune_acc is not None}
    best = max(means, key=lambda k: (means[k], -k))
    if best == r.recipe or means.get(best) == means.get(r.recipe):
        return f"trial {r.recipe} has the best {'mean ' if confirmed else ''}tune_acc and is the recipe"
    simpler = "a rule" if r.trials[r.recipe].source == "rule" else "fewer keys set"
    return (f"trial {r.recipe} is within recover.tolerance ({r.verdict.tolerance:g}) of the best, trial {best}'s "
            f"{means[best]:.3f}, and simpler ({simpler}): the recipe")
