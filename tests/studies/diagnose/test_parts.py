"""The drop, decomposed (harness.studies.diagnose.parts): the ladder's and the Shapley parts add up to the drop seed by
seed, agree where they must, and read and say what their paired t-intervals show."""
from itertools import combinations, permutations

import numpy as np
import pytest
from scipy import stats

from harness.studies.diagnose import parts as diagnosis_parts
from harness.studies.diagnose.parts import (
    LADDER,
    PARTS,
    Estimate,
    Part,
    estimate,
    ladder_parts,
    sentence,
    shapley_parts,
)

ARM_PIECES = {"steps": ("steps",), "steps_lr": ("steps", "lr"), "steps_lr_ghost": ("steps", "lr", "ghost")}


def _random_runs(rng, seeds: int, arms) -> tuple[dict, dict]:
    keys = ["b", "B", *arms]
    v = {key: rng.uniform(0.1, 0.9, seeds) for key in keys}
    return v, {key: v[key] + rng.uniform(-0.05, 0.3, seeds) for key in keys}


def _sums(drop: Estimate, parts: list[Part]) -> tuple[np.ndarray, float]:
    per_seed = np.sum([part.estimate.per_seed for part in parts], axis=0)
    return per_seed - np.asarray(drop.per_seed), sum(part.estimate.value for part in parts) - drop.value


@pytest.mark.parametrize("seeds", [1, 2, 3])
@pytest.mark.parametrize("rungs", [1, 2, 3])
def test_the_ladders_parts_add_up_to_the_drop_per_seed_and_in_the_mean(seeds, rungs):
    rng = np.random.default_rng(10 * seeds + rungs)
    arms = list(LADDER[:rungs])
    v, v_precise = _random_runs(rng, seeds, arms)
    drop, parts = ladder_parts(v, v_precise, arms)
    assert [part.name for part in parts] == ["stale_statistics", *PARTS[1:1 + rungs], "remains"]
    assert [part.arm for part in parts] == [None, *arms, arms[-1]]
    np.testing.assert_allclose(drop.per_seed, v["b"] - v["B"], atol=1e-12)
    per_seed, mean = _sums(drop, parts)
    assert np.abs(per_seed).max() < 1e-9 and abs(mean) < 1e-9


def test_each_ladder_part_is_its_arms_gain_over_the_one_before():
    v = {"b": [0.9, 0.8], "B": [0.2, 0.3], "steps": [0.4, 0.5], "steps_lr": [0.5, 0.5], "steps_lr_ghost": [0.6, 0.7]}
    v_precise = {"b": [0.9, 0.9], "B": [0.7, 0.7], "steps": [0.75, 0.8], "steps_lr": [0.8, 0.8],
                 "steps_lr_ghost": [0.82, 0.84]}
    drop, parts = ladder_parts(v, v_precise, list(LADDER))
    values = {part.name: part.estimate.per_seed for part in parts}
    assert drop.per_seed == pytest.approx((0.7, 0.5))
    assert values["stale_statistics"] == pytest.approx((0.5 - 0.0, 0.4 - 0.1))
    assert values["fewer_updates"] == pytest.approx((0.05, 0.1))  # positive: matching the updates recovered accuracy
    assert values["learning_rate"] == pytest.approx((0.05, 0.0))
    assert values["ghost_batch_norm"] == pytest.approx((0.02, 0.04))
    assert values["remains"] == pytest.approx((0.08, 0.06))


def test_stale_statistics_are_zero_without_batch_norm_and_their_known_part_with_it():
    v = {"b": np.array([0.9, 0.92, 0.91]), "B": np.array([0.3, 0.35, 0.4]), "steps": np.array([0.6, 0.65, 0.6])}
    _, parts = ladder_parts(v, v, ["steps"])
    assert parts[0].estimate.per_seed == (0.0, 0.0, 0.0) and parts[0].estimate.reading == "ruled out"
    stale = {"b": v["b"], "B": v["B"] + 0.5, "steps": v["steps"] + 0.1}  # v'(B) - v(B) = 0.5, v'(b) - v(b) = 0
    _, parts = ladder_parts(v, stale, ["steps"])
    assert parts[0].estimate.value == pytest.approx(0.5) and parts[0].estimate.per_seed == pytest.approx((0.5,) * 3)


def test_a_diverged_arm_leaves_its_parts_not_measured_and_the_drop_measured():
    v = {"b": [0.9, 0.9, 0.9], "B": [0.5, 0.6, 0.5], "steps": [0.6, 0.72, 0.6], "steps_lr": [0.7, np.nan, 0.7],
         "steps_lr_ghost": [0.8, 0.82, 0.8]}
    drop, parts = ladder_parts(v, v, list(LADDER))
    readings = {part.name: part.estimate.reading for part in parts}
    assert drop.value == pytest.approx(1.1 / 3) and readings["fewer_updates"] == "shown"
    assert readings["learning_rate"] == readings["ghost_batch_norm"] == "not measured"
    assert readings["remains"] == "shown"  # the last arm ran: what remains after it is measured
    assert parts[2].estimate.value is None and parts[2].estimate.low is None


def test_the_ladder_must_be_a_prefix_of_LADDER_with_paired_seeds():
    v = {"b": [0.9], "B": [0.5], "steps": [0.6], "steps_lr": [0.7]}
    with pytest.raises(ValueError, match="prefix"):
        ladder_parts(v, v, ["steps_lr"])
    with pytest.raises(ValueError, match="no values for"):
        ladder_parts(v, v, ["steps", "steps_lr", "steps_lr_ghost"])
    with pytest.raises(ValueError, match="paired by seed"):
        ladder_parts({**v, "B": [0.5, 0.4]}, v, ["steps"])


def _configurations(pieces, seeds: int, value, staleness) -> tuple[dict, dict]:
    """v and v' for every subset of `pieces` at B, from value(subset) -> v' and staleness(subset) -> v' - v."""
    subsets = [frozenset(c) for size in range(len(pieces) + 1) for c in combinations(pieces, size)]
    v_precise = {s: np.asarray(value(s), dtype=float) * np.ones(seeds) for s in subsets}
    return {s: v_precise[s] - staleness(s) for s in subsets}, v_precise


def _shapley_sums_to_drop(pieces, v, v_precise, small, small_precise):
    drop, parts = shapley_parts(v, v_precise, small, small_precise, pieces)
    per_seed, mean = _sums(drop, parts)
    assert np.abs(per_seed).max() < 1e-9 and abs(mean) < 1e-9
    np.testing.assert_allclose(drop.per_seed, small - v[frozenset()], atol=1e-12)
    return drop, parts


@pytest.mark.parametrize("pieces", [["steps"], ["steps", "lr"], ["steps", "lr", "ghost"], ["ghost", "steps"]])
@pytest.mark.parametrize("seeds", [1, 3])
def test_shapley_parts_add_up_to_the_drop_per_seed(pieces, seeds):
    rng = np.random.default_rng(len(pieces) + seeds)
    noise = {p: rng.normal(0, 0.05, seeds) for p in ("base", "stale", "steps", "lr", "ghost")}
    v, v_precise = _configurations(  # random effects with interactions and staleness that depends on the pieces
        pieces, seeds, lambda s: 0.5 + noise["base"] + sum(noise[p] for p in s) * (1 + len(s)),
        lambda s: 0.2 + noise["stale"] * len(s) ** 2)
    small = rng.uniform(0.8, 0.9, seeds)
    drop, parts = _shapley_sums_to_drop(pieces, v, v_precise, small, small + rng.uniform(0, 0.02, seeds))
    expected = ["stale_statistics", *(n for n, p in diagnosis_parts.PIECES.items() if p in pieces), "remains"]
    assert [part.name for part in parts] == expected and drop.n == seeds


def test_with_one_piece_and_no_batch_norm_shapley_is_the_ladder():
    small = np.array([0.92, 0.9, 0.91])
    at_b = {"B": np.array([0.7, 0.72, 0.69]), "steps": np.array([0.8, 0.78, 0.85])}
    ladder_drop, ladder = ladder_parts({"b": small, **at_b}, {"b": small, **at_b}, ["steps"])
    by_set = {frozenset(): at_b["B"], frozenset({"steps"}): at_b["steps"]}
    drop, shapley = _shapley_sums_to_drop(["steps"], by_set, by_set, small, small)
    assert drop == ladder_drop and [p.name for p in shapley] == [p.name for p in ladder]
    for ours, theirs in zip(shapley, ladder, strict=True):
        assert ours.estimate.per_seed == pytest.approx(theirs.estimate.per_seed, abs=1e-15, rel=0)
    assert shapley[0].estimate.per_seed == (0.0, 0.0, 0.0) and shapley[-1].arm == "steps"


def _ladder_of(v, v_precise, small, small_precise):
    to_arm = {frozenset(pieces): arm for arm, pieces in ARM_PIECES.items()}
    arms = [to_arm[s] for s in v if s in to_arm]
    return ladder_parts({"b": small, "B": v[frozenset()], **{to_arm[s]: v[s] for s in v if s in to_arm}},
                        {"b": small_precise, "B": v_precise[frozenset()],
                         **{to_arm[s]: v_precise[s] for s in v_precise if s in to_arm}}, sorted(arms, key=len))


def test_with_additive_effects_shapley_is_the_ladder_in_any_order():
    effects = {"steps": np.array([0.05, 0.07, 0.06]), "lr": np.array([0.02, -0.01, 0.01]),
               "ghost": np.array([0.03, 0.02, 0.04])}
    small = np.array([0.93, 0.92, 0.94])
    for order in permutations(effects):
        v, v_precise = _configurations(list(order), 3, lambda s: 0.6 + sum(effects[p] for p in s), lambda s: 0.25)
        _, shapley = _shapley_sums_to_drop(list(order), v, v_precise, small, small + 0.01)
        _, ladder = _ladder_of(v, v_precise, small, small + 0.01)
        for ours, theirs in zip(shapley, ladder, strict=True):
            assert ours.name == theirs.name
            assert ours.estimate.per_seed == pytest.approx(theirs.estimate.per_seed, abs=1e-12)
        assert shapley[0].estimate.value == pytest.approx(0.24)  # 0.25 stale at B less b's 0.01


def test_with_an_interaction_shapley_shares_it_where_the_ladder_gives_it_to_the_later_piece():
    # the scaled learning rate helps only with the extra steps: +0.1 together, nothing alone
    small = np.array([0.9, 0.91, 0.92])
    together = frozenset({"steps", "lr"})
    v, v_precise = _configurations(["steps", "lr"], 3, lambda s: 0.6 + 0.05 * ("steps" in s) + 0.1 * (s == together),
                                   lambda s: 0.1)
    _, shapley = _shapley_sums_to_drop(["steps", "lr"], v, v_precise, small, small)
    _, ladder = _ladder_of(v, v_precise, small, small)
    ours = {part.name: part.estimate.value for part in shapley}
    theirs = {part.name: part.estimate.value for part in ladder}
    assert theirs["fewer_updates"] == pytest.approx(0.05) and theirs["learning_rate"] == pytest.approx(0.1)
    assert ours["fewer_updates"] == pytest.approx(0.1) and ours["learning_rate"] == pytest.approx(0.05)
    assert ours["stale_statistics"] == pytest.approx(theirs["stale_statistics"])
    assert ours["remains"] == pytest.approx(theirs["remains"])


def test_a_nan_configuration_leaves_every_shapley_part_not_measured_and_the_drop_measured():
    v, v_precise = _configurations(["steps", "lr"], 3, lambda s: 0.6 + 0.05 * len(s), lambda s: 0.1)
    v_precise[frozenset({"lr"})] = np.array([0.7, np.nan, 0.7])
    small = np.array([0.9, 0.92, 0.9])
    drop, parts = shapley_parts(v, v_precise, small, small, ["steps", "lr"])
    assert drop.value == pytest.approx(0.4 + 0.02 / 3) and drop.reading == "shown"
    assert [part.estimate.reading for part in parts] == ["not measured"] * 4


def test_shapley_needs_every_subset_and_known_pieces():
    v, v_precise = _configurations(["steps", "lr"], 2, lambda s: 0.6, lambda s: 0.0)
    del v[frozenset({"lr"})]
    with pytest.raises(ValueError, match="no values for"):
        shapley_parts(v, v_precise, np.ones(2), np.ones(2), ["steps", "lr"])
    with pytest.raises(ValueError, match="pieces must be"):
        shapley_parts(v_precise, v_precise, np.ones(2), np.ones(2), ["steps", "momentum"])


def test_the_interval_is_students_t_over_the_paired_seeds():
    values = np.array([0.10, 0.16, 0.13])
    e = estimate(values)
    assert stats.t.ppf(0.975, 2) == pytest.approx(4.303, abs=5e-4)
    half = 4.3027 * values.std(ddof=1) / np.sqrt(3)
    assert e.value == pytest.approx(0.13) and e.n == 3 and e.per_seed == pytest.approx((0.10, 0.16, 0.13))
    assert e.high - e.value == pytest.approx(half, rel=1e-4) and e.value - e.low == pytest.approx(half, rel=1e-4)


@pytest.mark.parametrize("per_seed, reading", [
    ([0.3], "one seed: indicative"),
    ([0.001, 0.002, 0.003], "ruled out"),          # [-0.0015, 0.0045]: covers 0, yet too small to matter
    ([0.004, 0.005, 0.006], "ruled out"),          # excludes 0, but within +-0.01
    ([-0.1, 0.05, 0.2], "not shown by these runs"),
    ([0.005, 0.03, 0.02], "not shown by these runs"),  # covers 0, reaches past 0.01
    ([0.5, 0.51, 0.52], "shown"),
    ([-0.5, -0.51, -0.52], "shown"),
    ([0.1, np.nan, 0.2], "not measured"),
    ([np.nan], "not measured"),
])
def test_readings(per_seed, reading):
    e = estimate(per_seed)
    assert e.reading == reading
    if reading in ("one seed: indicative", "not measured"):
        assert e.low is None and e.high is None
    assert (e.value is None) == (reading == "not measured")


def _part(name, value, low, high, n=3):
    seeds = (value,) * n if value is None else tuple(value + 0.01 * (i - 1) for i in range(n))  # seeds that differ
    return Part(name, Estimate(value, low, high, n, seeds), None)


def test_the_sentence_names_every_part_with_its_interval():
    drop = Estimate(0.65, 0.55, 0.75, 3, (0.6, 0.65, 0.7))
    parts = [_part("stale_statistics", 0.55, 0.50, 0.60), _part("fewer_updates", 0.06, 0.01, 0.11),
             _part("learning_rate", 0.01, -0.02, 0.04), _part("remains", 0.03, -0.01, 0.07)]
    assert sentence(drop, parts) == (
        "Of the drop of 0.65 [0.55, 0.75], stale batch-norm statistics account for 0.55 [0.50, 0.60], fewer updates "
        "0.06 [0.01, 0.11], the learning rate 0.01 [-0.02, 0.04] and 0.03 [-0.01, 0.07] remains.")
    parts[2] = _part("learning_rate", None, None, None)
    text = sentence(drop, parts, {"fewer_updates": "matching the updates"})
    assert "the learning rate not measured" in text and "matching the updates 0.06 [0.01, 0.11]" in text


def test_seeds_that_agree_exactly_say_so_instead_of_an_interval_of_no_width():
    """Every run predicting one class: each seed gives the same value, and [0.00, 0.00] would read as certainty."""
    same = Estimate(0.0, 0.0, 0.0, 3, (0.0, 0.0, 0.0))
    parts = [Part("stale_statistics", Estimate(-0.03, -0.11, 0.05, 3, (-0.07, -0.03, 0.01)), None),
             Part("remains", Estimate(0.03, 0.03, 0.03, 3, (0.03, 0.03, 0.03)), None)]
    text = sentence(same, parts)
    assert text.startswith("Of the drop of 0.00 (identical at every seed), stale batch-norm statistics account for "
                           "-0.03 [-0.11, 0.05]")
    assert "0.03 (identical at every seed) remains" in text and "[0.00, 0.00]" not in text
    assert parts[1].estimate.reading == "identical at every seed: no spread to judge"  # not "shown"
    assert same.reading == "ruled out"  # 0 at every seed is still no part


def test_the_sentence_with_one_seed_has_no_brackets_and_says_it_is_indicative():
    drop = Estimate(0.649, None, None, 1, (0.649,))
    parts = [_part("stale_statistics", 0.551, None, None, 1), _part("ghost_batch_norm", -0.001, None, None, 1),
             _part("remains", 0.099, None, None, 1)]
    assert sentence(drop, parts) == ("Of the drop of 0.65, stale batch-norm statistics account for 0.55, ghost batch "
                                     "norm 0.00 and 0.10 remains (one seed: indicative).")


def test_a_real_decomposition_reads_as_one_sentence():
    rng = np.random.default_rng(0)
    v, v_precise = _random_runs(rng, 3, list(LADDER[:2]))
    drop, parts = ladder_parts(v, v_precise, list(LADDER[:2]))
    text = sentence(drop, parts)
    for part in parts:
        value, low, high = (round(x, 2) + 0.0 for x in (part.estimate.value, part.estimate.low, part.estimate.high))
        assert f"{value:.2f} [{low:.2f}, {high:.2f}]" in text  # + 0.0: the sentence writes no "-0.00"
    assert text.count("[") == 5 and text.endswith("remains.")
