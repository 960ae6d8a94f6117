"""The drop, decomposed: how much of a large batch's lower val_acc each change of its training recovers.

A user trained at a small global batch b and a large one B, and val_acc dropped. At B the harness runs a ladder of
arms, each adding one piece to the one before (LADDER): `steps` (as many optimizer updates as b takes), `steps_lr`
(+ the learning rate scaled from b), `steps_lr_ghost` (+ ghost batch norm in chunks of b; models with batch norm
only, so a ladder may stop at steps_lr). Every run gives v, its final val_acc with the moving batch-norm
statistics, and v', the same with the statistics recomputed for the final weights (v' = v without batch norm).
The observed drop D = v(b) - v(B) splits exactly into

    stale_statistics  (v'(B) - v(B)) - (v'(b) - v(b))     what recomputing the statistics recovers at B, less at b
    fewer_updates     v'(steps) - v'(B)                    each later part: what its arm recovers over the one before
    learning_rate     v'(steps_lr) - v'(steps)
    ghost_batch_norm  v'(steps_lr_ghost) - v'(steps_lr)
    remains           v'(b) - v'(last arm)

a telescoping sum, so the parts add up to D per seed and in the mean. A part is how much of the drop it accounts
for: a positive fewer_updates means matching the updates recovered accuracy.

The ladder's parts depend on its order: a piece that matters only together with another is credited to whichever
comes second. Shapley values over the pieces (Shorrocks 2013) average each piece's contribution over every order,
so they do not depend on one, and sum to the same D; they cost 2^k configurations for k pieces instead of k + 1
(shapley_parts, where recomputing the statistics is one more player that costs no run).

Every configuration runs the same seeds, so each part is computed seed by seed and estimated over seeds: the
paired differences spread less than unpaired means would, and Student's t interval of their mean uses n - 1
degrees of freedom (t(0.975, 2) = 4.30 at 3 seeds).

`remains` is what survives equal updates, a scaled learning rate (and ghost batch norm): positive, a
generalization gap of the large batch proper; near 0, Shallue et al. 2019's finding that tuning and compute budgets
explain the difference; negative, the large batch then generalises better. It also carries that the arms at B see
B/b times the epochs of data that b does, to take as many steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import factorial

import numpy as np

from harness.assess.paired import Estimate, estimate

PARTS = ("stale_statistics", "fewer_updates", "learning_rate", "ghost_batch_norm", "remains")
PIECES = {"fewer_updates": "steps", "learning_rate": "lr", "ghost_batch_norm": "ghost"}  # part -> the piece an arm adds
LADDER = ("steps", "steps_lr", "steps_lr_ghost")  # arm k applies the first k + 1 pieces
LABELS = {"stale_statistics": "stale batch-norm statistics", "fewer_updates": "fewer updates",
          "learning_rate": "the learning rate", "ghost_batch_norm": "ghost batch norm"}
STATISTICS = "stats"  # the Shapley player that recomputes the batch-norm statistics


@dataclass(frozen=True)
class Part:
    """One part of the drop: its name (one of PARTS), its estimate and the arm whose run measures it."""

    name: str
    estimate: Estimate
    arm: str | None


def _paired(values: dict, keys, what: str) -> dict:
    """The arrays of `keys`, checked present and of one length (index i is the same seed everywhere)."""
    missing = [key for key in keys if key not in values]
    if missing:
        raise ValueError(f"{what}: no values for {missing}; have {sorted(map(str, values))}")
    arrays = {key: np.asarray(values[key], dtype=float).ravel() for key in keys}
    lengths = {len(array) for array in arrays.values()}
    if len(lengths) != 1:
        raise ValueError(f"{what}: the configurations have different numbers of seeds {sorted(lengths)}; "
                         "they must be paired by seed")
    return arrays


def ladder_parts(v: dict[str, np.ndarray], v_precise: dict[str, np.ndarray],
                 arms: list[str]) -> tuple[Estimate, list[Part]]:
    """The drop's estimate and its parts along the ladder: stale_statistics, one part per arm, then remains.

    v and v_precise are keyed by "b", "B" (the as-is runs) and each arm in `arms`, a prefix of LADDER in order."""
    arms = list(arms)
    if tuple(arms) != LADDER[:len(arms)]:
        raise ValueError(f"arms must be a prefix of the ladder {list(LADDER)}, in order; got {arms}")
    keys = ["b", "B", *arms]
    plain = _paired(v, keys, "v")
    precise = _paired(v_precise, keys, "v_precise")
    if len(plain["b"]) != len(precise["b"]):
        raise ValueError("v and v_precise have different numbers of seeds; they must be paired by seed")
    drop = plain["b"] - plain["B"]
    parts = [Part("stale_statistics", estimate((precise["B"] - plain["B"]) - (precise["b"] - plain["b"])), None)]
    chain = ["B", *arms]
    for name, before, arm in zip(PIECES, chain, arms, strict=False):  # arm k adds part k's piece to the rung before
        parts.append(Part(name, estimate(precise[arm] - precise[before]), arm))
    parts.append(Part("remains", estimate(precise["b"] - precise[chain[-1]]), arms[-1] if arms else None))
    return estimate(drop), parts


def _shapley(game: dict[frozenset[str], np.ndarray], players: list[str]) -> dict[str, np.ndarray]:
    """Each player's Shapley value of `game` (the value of every coalition), by exact enumeration."""
    n = len(players)
    values = {}
    for player in players:
        others = [other for other in players if other != player]
        total = np.zeros_like(game[frozenset()])
        for size in range(n):
            weight = factorial(size) * factorial(n - size - 1) / factorial(n)
            for coalition in map(frozenset, combinations(others, size)):
                total = total + weight * (game[coalition | {player}] - game[coalition])
        values[player] = total
    return values


def shapley_parts(v: dict[frozenset[str], np.ndarray], v_precise: dict[frozenset[str], np.ndarray],
                  v_small: np.ndarray, v_small_precise: np.ndarray,
                  pieces: list[str]) -> tuple[Estimate, list[Part]]:
    """The drop's estimate and its parts as Shapley values, which do not depend on an order of the pieces.

    v and v_precise hold the configurations at B, keyed by the set of pieces applied (frozenset() is the as-is run;
    every subset of `pieces` must be present); v_small and v_small_precise are the as-is run at b. The players are
    the pieces and STATISTICS, whose coalition S is worth v'(config(S - stats)) if it holds STATISTICS, else
    v(config(S)). stale_statistics is that player's value less b's own staleness (v'(b) - v(b)), each piece's part
    its value, remains v'(b) - v'(all pieces). A seed where any configuration at B is NaN leaves every part not
    measured (each Shapley value reads every configuration); the drop needs only v(b) and v(B).
    Parts come in PARTS order; a piece's arm is None (every configuration measures it), remains's the one with
    every piece (its pieces joined by "_", e.g. "steps_lr")."""
    unknown = sorted(set(pieces) - set(PIECES.values()))
    if unknown or len(set(pieces)) != len(pieces):
        raise ValueError(f"pieces must be distinct, among {list(PIECES.values())}; got {list(pieces)}")
    coalitions = [frozenset(c) for size in range(len(pieces) + 1) for c in combinations(pieces, size)]
    plain = _paired({**v, "b": v_small}, [*coalitions, "b"], "v")
    precise = _paired({**v_precise, "b": v_small_precise}, [*coalitions, "b"], "v_precise")
    if len(plain["b"]) != len(precise["b"]):
        raise ValueError("v and v_precise have different numbers of seeds; they must be paired by seed")
    game = {**{c: plain[c] for c in coalitions}, **{c | {STATISTICS}: precise[c] for c in coalitions}}
    values = _shapley(game, [*pieces, STATISTICS])  # NaN anywhere in the game is NaN in every value
    everything = frozenset(pieces)
    parts = [Part("stale_statistics", estimate(values[STATISTICS] - (precise["b"] - plain["b"])), None)]
    parts += [Part(name, estimate(values[piece]), None) for name, piece in PIECES.items() if piece in pieces]
    broken = np.any([np.isnan(value) for value in game.values()], axis=0)
    remains = np.where(broken, np.nan, precise["b"] - precise[everything])
    arm = "_".join(piece for piece in PIECES.values() if piece in everything) or None
    parts.append(Part("remains", estimate(remains), arm))
    return estimate(plain["b"] - plain[frozenset()]), parts


def _number(e: Estimate) -> str:
    """0.55 [0.50, 0.60], or 0.55 with one seed, or 0.00 (identical at every seed), or "not measured". Seeds that
    agree exactly (every run predicting one class) give an interval of no width, which is no measure of doubt."""
    if e.value is None:
        return "not measured"
    text = f"{round(e.value, 2) + 0.0:.2f}"  # + 0.0: no "-0.00"
    if e.low is None or e.high is None:
        return text
    if e.identical:
        return f"{text} (identical at every seed)"
    return f"{text} [{round(e.low, 2) + 0.0:.2f}, {round(e.high, 2) + 0.0:.2f}]"


def sentence(drop: Estimate, parts: list[Part], labels: dict[str, str] | None = None) -> str:
    """The headline: "Of the drop of 0.65 [0.55, 0.75], stale batch-norm statistics account for 0.55 [0.50, 0.60],
    fewer updates 0.06 [0.01, 0.11], the learning rate 0.01 [-0.02, 0.04] and 0.03 [-0.01, 0.07] remains."
    `labels` overrides LABELS, the words for each part."""
    words = {**LABELS, **(labels or {})}
    phrases = []
    for part in parts:
        number = _number(part.estimate)
        if part.name == "remains":
            measured = part.estimate.value is not None
            phrases.append(f"{number} remains" if measured else "what remains is not measured")
        elif not phrases and part.estimate.value is not None:
            phrases.append(f"{words[part.name]} account for {number}")
        else:
            phrases.append(f"{words[part.name]} {number}")
    listed = ", ".join(phrases[:-1]) + " and " + phrases[-1] if len(phrases) > 1 else "".join(phrases)
    head = f"Of the drop of {_number(drop)}" if drop.value is not None else "Of the drop (not measured)"
    tail = " (one seed: indicative)" if drop.n == 1 else ""
    return f"{head}, {listed}{tail}." if listed else f"{head}{tail}."
