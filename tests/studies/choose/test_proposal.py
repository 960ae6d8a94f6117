"""The ramp choose proposes from its curves (harness.studies.choose.proposal): on synthetic curves where a small batch
is faster early and a large one late it switches where their times per accuracy level cross; where one batch is
fastest throughout, or the switch costs more than it saves, or a phase would be shorter than an epoch, none."""
import math

import numpy as np
import pytest

from harness.studies.choose import proposal
from harness.studies.choose.proposal import Curve

TARGET, TRAIN = 0.8, 4000


def curve(size: int, steps_to, seconds_per_step: float, one_time: float = 0.0) -> Curve:
    """A run checked at 80 points up to the target: `steps_to(level)`, the steps at which it reaches each level."""
    levels = np.linspace(0.01, TARGET, 80)
    return Curve(size, tuple(int(round(steps_to(a))) for a in levels), tuple(float(a) for a in levels),
                 seconds_per_step, one_time)


def small(one_time=0.0):  # batch 32, 1 ms a step, slowing as the accuracy rises: 1 / (1 - a)^2 s per unit of it
    return curve(32, lambda a: 1000 * a / (1 - a), 0.001, one_time)


def large(seconds_per_step=0.004, one_time=0.0):  # batch 512: 2 s per unit of accuracy at 4 ms a step
    return curve(512, lambda a: 500 * a, seconds_per_step, one_time)


def test_a_small_batch_faster_early_and_a_large_one_late_switch_where_their_times_per_level_cross():
    found = proposal.propose([large(), small()], TARGET, TRAIN)
    crossing = 1 - 1 / math.sqrt(2)  # 1 / (1 - a)^2 = 2
    assert found.why_not is None and [size for _, size in found.phases] == [32, 512]
    assert found.switches[0] == pytest.approx(crossing, abs=TARGET / proposal.LEVELS)
    # batch 32 reaches the crossing after 1000 a / (1 - a) steps of 32 samples: 3.3 epochs of 4000
    assert found.phases == [(0, 32), (round(1000 * crossing / (1 - crossing) * 32 / TRAIN), 512)] == [(0, 32), (3, 512)]
    assert found.predicted < found.fixed[1] and found.saving < 0
    assert found.fixed == (512, pytest.approx(0.004 * 500 * TARGET, rel=0.02))  # the fastest fixed batch


def test_one_batch_fastest_at_every_level_proposes_none():
    found = proposal.propose([small(), large(seconds_per_step=0.0005)], TARGET, TRAIN)
    assert found.phases == [] and found.why_not == proposal.ONE_BATCH and math.isinf(found.predicted)
    assert found.fixed[0] == 512


def test_a_switch_that_costs_more_than_it_saves_proposes_none():
    found = proposal.propose([small(), large(one_time=5.0)], TARGET, TRAIN)
    assert found.phases == [] and found.why_not == proposal.SWITCH_COST and found.fixed[0] == 32


def test_a_switch_pays_what_a_fit_s_start_cost_in_the_batch_s_run_not_its_one_time_cost():
    """A large batch whose run's one-time cost (5 s, its first check's compile included) is more than the ramp
    saves, but whose fit started in 0.1 s: a switch to it costs 0.1 s, and the ramp is proposed."""
    costly = large(one_time=5.0)
    found = proposal.propose([small(), Curve(costly.size, costly.steps, costly.tune_acc, costly.seconds_per_step,
                                             costly.one_time, switch=0.1)], TARGET, TRAIN)
    assert [size for _, size in found.phases] == [32, 512]
    older = proposal.propose([small(one_time=0.5), costly], TARGET, TRAIN)
    assert older.unswitched[2] == 0.5 + 5.0  # the first batch's start, and a switch where none was measured
    assert not older.switches_measured  # which the page says


def test_a_phase_shorter_than_an_epoch_proposes_none():
    found = proposal.propose([small(), large()], TARGET, train_size=400_000)  # every phase a fraction of an epoch
    assert found.phases == [] and found.why_not == proposal.SHORT


def test_where_the_switches_cost_more_the_proposal_says_by_how_much():
    found = proposal.propose([small(), large(one_time=5.0)], TARGET, TRAIN)
    sizes, free, cost = found.unswitched
    assert sizes == [32, 512] and cost == 5.0 and free < found.fixed[1] < free + cost
