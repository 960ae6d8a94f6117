"""+study=choose's ramps, read from its files: the ramp proposed from each batch size's best on the seed that chose
it (its target run's checks: steps, tuning accuracy and seconds, harness.studies.choose.proposal), as a recipe on
the command, and the recipes of Smith's rule and Seesaw, which the plan recorded. Each is a candidate of its own, at its first
phase's batch (settings.RAMPS), confirmed and timed like every batch size's best. Files in, recipes out."""
from __future__ import annotations

from typing import Any

from harness.store import sweep_file
from harness.store.files import DamagedFile
from harness.studies.choose import proposal, timing
from harness.studies.choose.settings import arm, recorded

NO_CURVES = "the best runs' target.json hold no tuning accuracy at their checks (a sweep made before they did)"
NO_SIZE = "a training set whose size is known before the first run"
# a later best's recipe keys its phase holds or the run gives it anyway: its learning rate (the phase's
# lr_factor), its warm-up (a run warms up once, in its first phase), its batch-norm momentum (the EMA rule sets
# every phase's from the first's: harness.config.ramp), its batch
CARRIED = ("lr_factor", "warmup_epochs", "model.bn_momentum", "batch_size")


def curves(sweep, found) -> list[proposal.Curve]:
    """Each batch size's best on the seed that chose it, as a proposal.Curve (a size whose run left no accuracy at
    its checks, or too few checks to give its seconds a step, is left out)."""
    out, seed = [], found.choosing[0]
    for size in found.sizes:
        best = found.best(size)
        job = None if best is None else best.jobs.get(seed)
        try:
            written = (sweep.target(job) or {}) if job is not None else {}
        except DamagedFile:
            written = {}
        times, accuracy = written.get("check_times") or [], written.get("check_tune_acc") or []
        rate = timing.rate(times)
        if rate is None or len(accuracy) != len(times):
            continue
        started = written.get("fit_start_seconds") or [None]  # its fit's start: what a switch to it pays
        out.append(proposal.Curve(size, tuple(int(c[0]) for c in times), tuple(float(a) for a in accuracy),
                                  rate.seconds_per_step, rate.one_time, started[0]))
    return out


def read(sweep, found, record: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """Each ramp's recipe by name (None: not made), once every batch size's candidates are read into `found` (a
    reading.Choice), which gets the proposal, why each ramp is not made, what the proposal changed or could not
    carry, the ramps to confirm and time, and those whose runs the round's planning refused."""
    recipes: dict[str, dict[str, Any] | None] = {}
    found.proposal, recipes["ramp"], found.ramp_note, found.ramp_fitted = propose(sweep, found, record)
    found.ramp_not_carried = not_carried(found, found.proposal, recipes["ramp"])
    recipes["smith"], found.smith_note = rule_recipe(record, "smith")
    recipes["seesaw"], found.seesaw_note = rule_recipe(record, "seesaw")
    found.ramp_recipes = {name: (found.proposal.phases[0][1] if name == "ramp" else int(record["small_batch"]),
                                 recipe) for name, recipe in recipes.items() if recipe is not None}
    refused = sweep_file.refused(sweep.plan)  # still proposed, so that every round plans the same
    found.refused = {name: refused[arm(size, name)] for name, (size, _) in found.ramp_recipes.items()
                     if arm(size, name) in refused}
    return recipes


def propose(sweep, found, record: dict[str, Any]) -> tuple[proposal.Proposal | None, dict[str, Any] | None, str,
                                                          str]:
    """(the proposal, its recipe on the command or None, why there is none or "", what was changed to fit it or "")
    once every batch size's candidates and grid have ended; (None, None, "", "") before, or in a sweep planned
    without ramps."""
    if not recorded(record).ramp or found.target is None or found.rounds < 2 + (record["target"] is None):
        return None, None, "", ""
    if record.get("train_size") is None:
        return None, None, f"a proposal needs {NO_SIZE}", ""
    found_curves = curves(sweep, found)
    if len(found_curves) < 2:
        return None, None, NO_CURVES if len(found_curves) < len([s for s in found.sizes if found.best(s)]) else \
            "fewer than two batch sizes reached the target on the seed that chose", ""
    made = proposal.propose(found_curves, found.target, record["train_size"])
    if not made.phases:
        return made, None, made.why_not or "", ""
    gain, least = -made.saving, recorded(record).ramp_min_gain
    if gain < least:  # a gain inside the noise is not worth its runs
        said = f"{gain:.1%} faster" if gain > 0 else f"{-gain:.1%} slower"
        return made, None, (f"its predicted time is {said} than batch {made.fixed[0]}'s ({made.predicted:.3g} s against "
                            f"{made.fixed[1]:.3g} s, from the same curves), less of a gain than choose.ramp_min_gain "
                            f"({least:.0%})"), ""
    if not any(0 < start < record["max_epochs"] for start, _ in made.phases):
        return made, None, (f"its first switch, after epoch {made.phases[1][0]}, would come once every run has "
                            f"stopped (choose.max_epochs: {record['max_epochs']})"), ""
    out, fitted = recipe(found, record, made)
    return made, out, "", fitted


def recipe(found, record: dict[str, Any], made: proposal.Proposal) -> tuple[dict[str, Any], str]:
    """(The proposal as a recipe on the command, what was changed to fit it or ""): the first phase's best recipe,
    and a batch_schedule whose every phase runs at its batch size's best learning rate ([start, batch, lr_factor],
    each batch as the command configures it: per replica under per_replica_batch), its starts inside the cap. A
    warm-up, the command's or the first phase's recipe's, longer than the first phase ends with it: a run warms up
    once, within its first phase."""
    first = found.best(made.phases[0][1])
    per = int(record.get("replicas_per_batch", 1))  # a sweep recorded before it: one replica's, or global batches
    phases = [[start, size // per, float(found.best(size).recipe.get("lr_factor", record["lr_factor"]))]
              for start, size in made.phases if start < record["max_epochs"]]
    out = {k: v for k, v in first.recipe.items() if k != "lr_factor"}
    warm, fitted = out.get("warmup_epochs", record.get("warmup_epochs")), ""
    if len(phases) > 1 and warm and float(warm) > phases[1][0]:
        out["warmup_epochs"] = float(phases[1][0])
        fitted = (f"its warm-up shortened from {float(warm):g} to {phases[1][0]} epoch{'s' * (phases[1][0] > 1)}, "
                  "the length of its first phase")
    out["batch_schedule"] = "[" + ",".join(f"[{s},{b},{f:g}]" for s, b, f in phases) + "]"
    return out, fitted


def not_carried(found, made: proposal.Proposal | None, recipe_made: dict[str, Any] | None) -> dict[int, dict[str, Any]]:
    """What a later phase's best sets that its phase cannot hold, by batch ({} without a recipe made): a phase is
    [start, batch, lr_factor], and every phase runs with the first phase's recipe besides (adam_sde's betas and
    epsilon, a ghost batch, precise BN of a later batch's best are not carried)."""
    if made is None or recipe_made is None:
        return {}
    first = found.best(made.phases[0][1]).recipe
    out = {}
    for _, size in made.phases[1:]:
        kept = {k: v for k, v in found.best(size).recipe.items() if k not in CARRIED and first.get(k) != v}
        if kept:
            out[size] = kept
    return out


def not_carried_text(found) -> str:
    """What the proposal's later phases could not take from their batch sizes' bests, in words ("" where nothing)."""
    said = "; ".join(f"batch {size}'s best ({found.best(size).name}) sets " + ", ".join(
        f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}" for key, value in keys.items())
        for size, keys in found.ramp_not_carried.items())
    return "" if not said else (f" A phase holds its batch and learning rate only, so every phase runs with batch "
                                f"{found.proposal.phases[0][1]}'s recipe besides: {said}, which its phase does not "
                                "carry.")


def rule_recipe(record: dict[str, Any], name: str) -> tuple[dict[str, Any] | None, str]:
    """A published ramp's recipe (`name`: smith, seesaw) as the plan recorded it, or (None, why not; "" for a sweep
    planned without ramps, or before the rule was)."""
    found = record.get(name) or {}
    return found.get("recipe"), found.get("why_not") or ""
