import numpy as np
import pandas as pd

from harness.assess import targets


def _runs(rows):
    return pd.DataFrame([{"run_id": f"r{i}", "job": str(i), targets.BATCH: b, "peak_lr": lr, "seed": seed,
                          "status": "completed", "steps": steps} for i, (b, lr, seed, steps) in enumerate(rows)],
                        columns=targets.COLUMNS)


def test_a_run_that_missed_the_target_counts_as_never_reaching_it():
    """lr 0.1 reached in 50 steps on seed 0 but missed on seed 1: its mean is infinite, and lr 0.05, slower but
    reached on every seed, is chosen (averaging the miss away would choose 0.1 at 50 steps)."""
    runs = _runs([(8, 0.1, 0, 50.0), (8, 0.1, 1, None), (8, 0.05, 0, 80.0), (8, 0.05, 1, 90.0)])
    cells = targets.cells(runs)
    assert np.isinf(cells[8][0.1]).tolist() == [False, True]
    assert targets.fewest(cells[8]) == (0.05, 85.0)


def test_no_candidate_is_chosen_when_none_reached_on_every_seed():
    runs = _runs([(64, 0.4, 0, None), (64, 0.4, 1, 30.0), (64, 0.8, 0, 20.0), (64, 0.8, 1, None)])
    assert targets.fewest(targets.cells(runs)[64]) is None


def test_a_tie_goes_to_the_smaller_candidate_and_any_column_can_be_the_candidate():
    runs = _runs([(8, 0.1, 0, 40.0), (8, 0.2, 0, 40.0)]).assign(arm=["b", "a"])
    assert targets.fewest(targets.cells(runs)[8]) == (0.1, 40.0)
    assert targets.fewest(targets.cells(runs, "arm")[8]) == ("a", 40.0)
