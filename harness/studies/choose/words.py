"""+study=choose in words: what the results table prints under a choice's runs."""
from __future__ import annotations

import math


def results_lines(found) -> list[str]:
    """The target and, at every batch size, the candidate it goes on with and its steps to the target per seed."""
    if found is None:
        return []
    if found.target is None:
        return [f"choose: {found.target_note}"]
    lines = [f"choose: target tune_acc {found.target:g} ({found.target_note})"]
    for size in found.sizes:
        leader = found.leader(size)
        if leader is None:
            lines.append(f"  batch {size}: no run yet")
            continue
        steps = ", ".join("missed" if not math.isfinite(s) else f"{s:.0f}" for s in
                          (leader.steps[seed] for seed in found.seeds if seed in leader.steps))
        lines.append(f"  batch {size}: {leader.name} ({recipe_text(leader.recipe)}), steps to the target by seed: {steps}")
    return lines


def recipe_text(recipe: dict) -> str:
    """A recipe as its overrides, or what an empty one is."""
    return " ".join(f"{k}={v}" for k, v in recipe.items()) or "the command as it is"
