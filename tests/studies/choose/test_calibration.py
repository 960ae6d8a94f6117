"""+study=choose's stated levels under the study's own structure, end to end through its reading (answer.of over
reading.Candidate's, as choice.json is read from a sweep's files): four batch sizes on four seeds, the first choosing
and three judging; a seed effect every batch size shares (an easy seed is easy for all) and one of each batch size's
own; steps rounded up to the epoch in which the run crossed the target; each run's time a cold start plus its
epochs, each with its own noise (every judging seed's time is its own run); now and then a seed that misses; the
answer picked as the least median among the batch sizes. The draws are seeded: the same numbers every time.

The line design before it (two timed runs' C and r taken in turn over the seeds, each speed-up's interval on its
own) said "faster" in 7.8% of 2,000 draws with every batch size equally fast (nominal 2.5%)."""
import math

import numpy as np

from harness.studies.choose import answer as answer_of
from harness.studies.choose import reading as choice

SIZES = (8, 32, 128, 512)
SEEDS = (0, 1, 2, 3)  # 0 chooses, 1-3 judge
DRAWS = 2000
SLACK = 0.03  # binomial spread of a 95% coverage over ~2,000 draws: 0.5 points; the rest is the rounding's
# one run's time: a cold start (its compile, its first call) of COLD x the median, the rest its epochs
COLD, COLD_SD, RUN_SD, SEED_SD, OWN_SD, EPOCH, MISS = 0.3, 0.2, 0.05, 0.15, 0.08, 0.15, 0.03


def _runs(rng, median: float, shared: np.ndarray, epoch: float = EPOCH) -> np.ndarray:
    """Each seed's recorded time to the target: its steps' seconds (the shared seed effect and its own) rounded up to
    the epoch's end, and a cold start, each with its run's noise."""
    training = (1 - COLD) * median
    crossing = training * np.exp(shared + rng.normal(0, OWN_SD, len(shared)))
    rounded = np.ceil(crossing / (epoch * training)) * epoch * training
    return COLD * median * np.exp(rng.normal(0, COLD_SD, len(shared))) + rounded * np.exp(rng.normal(0, RUN_SD,
                                                                                                        len(shared)))


def _sweep(rng, medians, ramp: float | None = None) -> choice.Choice:
    """A choice whose every batch size's best (the command as it is) ran on every seed, its times drawn; with
    `ramp`, a ramp of that median too (a candidate of its own at the first batch size, the same seed effects)."""
    shared = rng.normal(0, SEED_SD, len(SEEDS))
    candidates = {}
    for size, name, median in [*zip(SIZES, ["as_is"] * len(SIZES), medians), *([(SIZES[0], "ramp", ramp)]
                                                                                if ramp is not None else [])]:
        times = _runs(rng, median, shared)
        missed = rng.random(len(SEEDS)) < MISS
        missed[0] = False  # the seed that chose: every best reached the target there
        candidates.setdefault(size, []).append(choice.Candidate(
            size, name, {}, steps={s: math.inf if m else 100.0 for s, m in zip(SEEDS, missed)},
            tune_acc={s: 0.9 for s in SEEDS}, seconds={s: None if m else float(t) for s, t, m in
                                                        zip(SEEDS, times, missed)},
            samples={s: 100.0 * size for s in SEEDS}))
    return choice.Choice(0.9, "", list(SIZES), list(SEEDS), candidates, 5)


def _answer(found: choice.Choice) -> answer_of.Answer | None:
    """The answer as timed_runs.read gives it: each judging seed's own run's time."""
    return answer_of.of(found, lambda size, c: answer_of.measured(size, c, found.judging))


def _log_mean(rng, median: float, runs: int = 400_000) -> float:
    """E[log time] of one batch size's runs: the truth a paired log-ratio estimates (the rounding and the cold start
    make it other than log median)."""
    return float(np.log(_runs(rng, median, rng.normal(0, SEED_SD, runs))).mean())


def test_with_every_batch_size_equally_fast_faster_is_said_at_most_at_its_stated_rate():
    """One-sided, a 95% interval above 1 by chance is 2.5%; the pick of the least median among four must not add
    to it (a speed-up's interval is one of as many as the answer was picked from: 1.6% of 4,000 draws; each interval
    on its own said "faster" in 4.3%). The bound is the level and twice the binomial spread of 4,000 draws."""
    rng = np.random.default_rng(0)
    draws = 2 * DRAWS
    said = sum(bool((a := _answer(_sweep(rng, [10.0] * 4))) is not None and a.beats_base) for _ in range(draws))
    assert said / draws <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / draws), said


def test_a_known_speed_up_is_inside_its_interval_at_the_stated_level():
    """Batch 8 as it is takes 10 s, 32, 128 and 512 take 4 s each: which of the three is the answer is the luck of
    the draw, and its interval still covers the true speed-up (the ratio of the two batch sizes' mean log times)."""
    rng = np.random.default_rng(1)
    medians = [10.0, 4.0, 4.0, 4.0]
    truth = math.exp(_log_mean(rng, 10.0) - _log_mean(rng, 4.0))
    covered = claimed = 0
    for _ in range(DRAWS):
        a = _answer(_sweep(rng, medians))
        if a is None or a.best is a.base:
            continue
        interval = a.speedup.interval
        if not interval.claims:  # b missed two of the three seeds: no interval, no claim
            continue
        claimed += 1
        covered += interval.low <= truth <= interval.high
        assert interval.level == 0.95 and 1 <= interval.family <= 3  # as many as reached the target beside b
    assert claimed > 0.9 * DRAWS and covered / claimed >= 0.95 - SLACK, (covered, claimed)


def test_a_rerun_on_a_new_seed_lands_inside_the_answers_prediction_interval_at_its_level():
    """The answer's printed command rerun on a seed that neither chose nor judged (a fresh seed effect, a fresh
    process): inside the prediction interval its judging seeds' times give, at 95% within the slack, though the
    answer was the luckiest of three equally fast batch sizes."""
    rng = np.random.default_rng(2)
    medians = [10.0, 4.0, 4.0, 4.0]
    inside = checked = 0
    for _ in range(DRAWS):
        a = _answer(_sweep(rng, medians))
        if a is None:
            continue
        band = a.best.prediction
        rerun = _runs(rng, medians[SIZES.index(a.size)], rng.normal(0, SEED_SD, 1))[0]
        checked += 1
        inside += band.low <= rerun <= band.high
        assert band.level == 0.95 and band.n == 3
    assert checked > 0.9 * DRAWS and inside / checked >= 0.95 - SLACK, (inside, checked)


def test_a_ramp_as_fast_as_every_batch_size_is_shown_slower_than_the_fastest_at_most_at_its_stated_rate():
    """A ramp as fast as all four batch sizes, set against the fastest of them: that one is picked by the same
    seeds' times, so it is the luckiest, and its interval against the ramp is one of as many as it was picked from.
    One-sided, "shown slower" (the interval below 1) by chance is 2.5%: 1.3% of the 3,626 of 4,000 draws that judged
    it (the rest a seed missed); with each interval on its own, 4.6%."""
    rng = np.random.default_rng(3)
    draws, slower, judged = 2 * DRAWS, 0, 0
    for _ in range(draws):
        a = _answer(_sweep(rng, [10.0] * 4, ramp=10.0))
        if a is None or not a.ramps or a.ramps[0][1] is None:  # a seed the ramp or every batch size missed
            continue
        judged += 1
        slower += a.ramps[0][1].interval.below(1.0)
    assert judged > 0.8 * draws and slower / judged <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / judged), (slower, judged)
