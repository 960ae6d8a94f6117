"""Old sweeps rebuild as they did before the studies were folders: tests/fixtures/studies holds three real sweeps
run by the harness at 4144b45 (the main job, a diagnosis and a recovery, on 1,000 MNIST-1D samples; weights, logs,
TensorBoard and Hydra's files left out, which no reader needs) and tests/fixtures/study-outputs what that code made
of them: the report's text, diagnosis.json, recovery.json, the results table and the findings block, written by
`python -m scripts.study_outputs` (the day, the machine's cores and the capacity check's seconds masked). A change
meant to change what a user reads rewrites them with the same command, its diff read in review: issue 65's readings
cut the recovery's accuracy intervals at 0 and 1, added recovery.json's gain over b and named +study=recover
beside +study=diagnose under the main job's verdict; its rules and guided round added each trial's source (an old
sweep's are all Sobol points) to recovery.json and the report's table of trials; issue 72's decision rule reads the
recovery's gap +0.167 [-0.754, +1.089] at 2 seeds as undecided (was not recovered), with the seeds and the command
that would decide it (recovery.json's more_seeds), and its budget's rule beside the recipe (rule_trial null,
rule_lengths [] in an old sweep); issue 73 names the studies a report's measured-beside paragraph points to from
their next steps (the studies that offer one), not from names typed into the page's template; issue 74's time to a
target adds target.json's seconds_to_target and check_seconds to the results table (empty here: no run had a
target), and the main job's verdict names +study=choose's command beside diagnose's and recover's; issue 78 adds
recovery.json's chose and judged (an old sweep's verdict paired the seeds that chose: both [0, 1]) and states the
symmetric verdict's rule under the recovery's table, over the seeds that judged; issue 88 states the minima's
sharpness as a ratio with its 95% interval on the log scale (was a Welch p on the difference) and adds
recovery.json's left_out (the judging seeds the verdict could not pair: none here)."""
import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.report import html, results
from scripts import findings, study_outputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _without_seconds(value):
    """A study's file without the seconds a check took (a time, not a result)."""
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


@pytest.mark.parametrize("name", ["main", "diagnose", "recover"])
def test_an_old_sweep_rebuilds_as_it_did(name, tmp_path):
    sweep, expected = tmp_path / name, FIXTURES / "study-outputs" / name
    shutil.copytree(FIXTURES / "studies" / name, sweep)
    report = html.write_report(sweep, tmp_path / "reports")
    assert study_outputs.report_text(report.read_text(), sweep) == (expected / "report.txt").read_text()
    for written in ("diagnosis.json", "recovery.json"):
        assert (sweep / written).exists() == (expected / written).exists(), written
        if (expected / written).exists():
            assert _without_seconds(json.loads((sweep / written).read_text())) == \
                _without_seconds(json.loads((expected / written).read_text()))
    table = results.sweep_results(sweep)
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(table.to_csv(index=False))),
                                  pd.read_csv(expected / "results.csv"))
    assert study_outputs.masked_findings(findings.summarize(sweep)) == (expected / "findings.md").read_text()
