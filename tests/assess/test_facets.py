"""Sweeps of many facets (harness.assess.facets): Holm's adjustment, one table sorted by it, and the two facets the
figures draw, on constructed sweeps."""
import numpy as np
import pytest

from harness.assess import facets
from harness.assess.assessment import assess
from tests.helpers.sweeps import batch_sweep, make_run

LRS = [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02]


def test_holm_multiplies_the_ith_smallest_p_by_m_minus_i_plus_1_and_keeps_them_in_order():
    assert facets.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert facets.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    p = np.random.default_rng(0).uniform(size=20)
    adjusted = facets.holm(p.tolist())
    assert all(a >= b for a, b in zip(adjusted, p)) and sorted(adjusted) == [adjusted[i] for i in np.argsort(p)]


def _grid(tmp_path, drops):
    """Constructed runs: batch 8 and 128 x one facet (lr) per entry of `drops`, 3 seeds; each facet's batch-128
    runs end `drop` below its batch-8 runs (seed spread 0.01)."""
    sweep, job = tmp_path / "sweep", 0
    for lr, drop in zip(LRS, drops):
        for seed in range(3):
            for batch, final in ((8, 0.9), (128, 0.9 - drop)):
                value = final + 0.01 * (seed - 1) * (1 if batch == 8 else -1)
                make_run(sweep, job, batch_size=batch, seed=seed, lr=lr, val=(value - 0.1, value),
                         overrides=[f"batch_size={batch}", f"lr={lr}", f"seed={seed}"])
                job += 1
    return sweep


def test_many_facets_are_one_table_sorted_by_the_adjusted_evidence(tmp_path):
    drops = [0.0, 0.05, 0.2, 0.0, 0.03, 0.1, 0.0, 0.08]
    a = assess(_grid(tmp_path, drops))
    table = a.facet_table
    assert table is not None and len(table.rows) == 8
    adjusted = [r.adjusted for r in table.rows]
    assert adjusted == sorted(adjusted)  # the strongest evidence first: the facet that decides the headline
    assert table.rows[0].facet == "base_lr=0.0005" and table.rows[0].drop == pytest.approx(0.2)
    for row in table.rows:
        assert row.adjusted >= row.p_value and row.holds == (row.outcome == "reproduced" and row.adjusted < 0.05)
    reproduced = sum(r.outcome == "reproduced" for r in table.rows)
    assert table.headline.startswith(f"Larger batches gave lower validation accuracy: reproduced in {reproduced} of 8")
    assert table.shown[0] == table.rows[0].facet and "chosen on validation" in table.shown[1]


def test_the_figures_draw_the_first_facet_and_the_best_setting_at_each_batch_size(tmp_path):
    drops = [0.0, 0.05, 0.2, 0.0, 0.03, 0.1, 0.0, 0.08]
    a = assess(_grid(tmp_path, drops))  # every facet ends at 0.9 at batch 8; lr 0.0001 loses nothing at 128
    drawn = a.drawn
    assert set(drawn["facet"]) == {a.facet_table.shown[0], a.facet_table.best}
    best = drawn[drawn["facet"] == a.facet_table.best].drop_duplicates("run_id")
    assert sorted(best.groupby("global_batch_size")["base_lr"].first().items()) == [(8, 0.0001), (128, 0.0001)]
    assert best["run_id"].str.endswith(" (best setting)").all()


def test_a_few_facets_keep_a_verdict_each(tmp_path):
    a = assess(batch_sweep(tmp_path / "s", {8: [0.9, 0.91, 0.92], 128: [0.8, 0.81, 0.79]}))
    assert a.facet_table is None and a.drawn is None and len(a.batch_verdicts) == 1
