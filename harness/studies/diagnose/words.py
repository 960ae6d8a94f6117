"""How a diagnosis is said: the arms in words, how the parts were read (the attribution and the learning-rate rule),
what each piece recovers alone, the notes on reading the parts and the section's heading."""
from __future__ import annotations

from typing import Any

from harness.studies.diagnose.settings import recorded

ARM_WORDS = {"steps": "as many updates as batch {b}", "lr": "the learning rate scaled from batch {b}",
             "ghost": "ghost batch norm in chunks of batch {b}'s"}


def alone(b: int, big: int, stale: float | None, pieces: dict[str, float]) -> str:
    """What each piece recovers on its own against B as it is (`stale`: the recomputed statistics' less b's own
    staleness, as the batch-size verdict reads them; None without them; `pieces`: arm -> its mean gain over B):
    beside the Shapley values, which share what pieces recover together."""
    said = [] if stale is None else [f"recomputed statistics {stale:+.2f}"]
    said += [f"{ARM_WORDS[p].format(b=b)} {gain:+.2f}" for p, gain in pieces.items()]
    return (f"Each piece alone, against batch {big} as it is: {', '.join(said)}. Where two pieces recover the same "
            "part of the drop (more updates also let moving averages catch up), the Shapley values share it "
            "between them, so a part can be smaller than its piece alone.")


def method(plan: dict[str, Any]) -> str:
    """How the parts were read: the attribution and the rule the learning-rate arms scaled b's rate by."""
    b, big, settings = plan["small_batch"], plan["large_batch"], recorded(plan)
    if plan["attribution"] == "shapley":
        how = "Parts as Shapley values over every combination of the arms (no order)"
    else:
        how = f"Parts along the ladder ({', then '.join(plan['ladder'])}: each credited in that order)"
    if settings.lr_scaling == "linear":
        warmup = settings.warmup_epochs
        rule = f"x {big}/{b}" + (f", warmed up over {warmup:g} of batch {b}'s epochs" if warmup > 0 else "")
    else:
        rule = f"x sqrt({big}/{b})"
    return f"{how}; the learning-rate arms take batch {b}'s learning rate {rule}."


def title(d) -> str:
    """The report section's heading: why B lost to b only where the runs show a drop and learned."""
    shown = d.drop is not None and d.drop.value is not None and d.drop.value > 0 and d.drop.reading == "shown"
    if d.level is None and shown:
        return f"Diagnosis: why batch {d.large_batch} lost to batch {d.small_batch}"
    return f"Diagnosis: batch {d.large_batch} against batch {d.small_batch}"


def reading_notes(plan: dict[str, Any], parts: list, n_seeds: int) -> list[str]:
    """How to read the parts (the order, remains), and what the runs could not show."""
    b, big = plan["small_batch"], plan["large_batch"]
    pieces = [ARM_WORDS[p].format(b=b) for p in plan["ladder"][-1].split("_")] if plan["ladder"] else []
    notes = []
    if plan["attribution"] == "ladder":
        notes.append(f"The ladder's order changes the parts: at batch {big}, {'; then '.join(pieces)}, each arm adding "
                     "its piece to the one before, and each part is what its piece added there. "
                     "diagnose.attribution=shapley runs every subset of the arms and gives parts that depend on no "
                     "order.")
    else:
        notes.append("Shapley values over the arms and the recomputation of the statistics: each part is its piece's "
                     "average gain over every order, so no piece is taken first.")
    notes.append(f"remains is what the arms leave of the drop: positive, a generalization gap that survives equal "
                 f"updates and a scaled learning rate; negative, batch {big} then generalises better than batch {b}. "
                 f"Its arms also saw {big / b:g}x the samples batch {b} saw ({big / b:g} times the epochs).")
    notes += [f"{name.replace('_', ' ')}: no arm, since {why}." for name, why in plan.get("left_out", {}).items()]
    unmeasured = [p.name for p in parts if p.estimate.value is None]
    if unmeasured:
        notes.append(f"Not measured: {', '.join(unmeasured)} (an arm diverged, so its accuracy is no number).")
    if n_seeds == 1:
        notes.append("One seed: no interval, the parts are indicative only; seed=0,1,2 gives each a 95% interval.")
    return notes
