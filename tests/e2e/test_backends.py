"""The same sweep on both backends writes the same things: the smoke study's command with backend=jax against the
shared TensorFlow one (files, columns and their types, records, probes, interpolation, TensorBoard, report)."""
import json

import pandas as pd
import pytest

from tests.helpers.board import assert_board_matches_metrics

pytestmark = pytest.mark.slow  # reads two real sweeps

VERSIONS = {"tensorflow", "jax"}  # run.json's environment names the backend's own version


def _runs(sweep):
    return sorted(p for p in sweep.iterdir() if p.is_dir() and p.name.isdigit())


def test_a_jax_sweep_writes_what_a_tensorflow_sweep_writes(smoke_sweep, jax_smoke_sweep):
    tf_sweep, jax_sweep = smoke_sweep[0] / "sweeps" / "smoke", jax_smoke_sweep[0] / "sweeps" / "smoke-jax"
    assert {p.name for p in tf_sweep.iterdir()} == {p.name for p in jax_sweep.iterdir()}
    for ours, theirs in zip(_runs(jax_sweep), _runs(tf_sweep), strict=True):
        assert {p.name for p in ours.iterdir()} == {p.name for p in theirs.iterdir()}
        jax_metrics, tf_metrics = pd.read_parquet(ours / "metrics.parquet"), pd.read_parquet(theirs / "metrics.parquet")
        assert dict(jax_metrics.dtypes) == dict(tf_metrics.dtypes)  # the same columns, of the same types
        assert set(jax_metrics["backend"]) == {"jax"} and set(tf_metrics["backend"]) == {"tensorflow"}
        records = [json.loads((run / "run.json").read_text()) for run in (ours, theirs)]
        assert records[0].keys() == records[1].keys() and records[0]["status"] == "completed"
        environments = [set(r["environment"]) for r in records]
        assert environments[0] - VERSIONS == environments[1] - VERSIONS
        assert records[0]["environment"]["backend"] == "jax" and "tensorflow" not in records[0]["environment"]
        probes = [json.loads((run / "probes.json").read_text()) for run in (ours, theirs)]
        assert probes[0].keys() == probes[1].keys() and probes[0]["error"] is None
        assert probes[0]["hessian_top_eigenvalue"] > 0 and probes[0]["sharpness"] > 0
        board = assert_board_matches_metrics(ours)
        assert board.statuses == ["STATUS_SUCCESS"] and board.hparams[0]["backend"] == "jax"
    interpolations = [pd.read_parquet(s / "interpolation.parquet") for s in (jax_sweep, tf_sweep)]
    assert dict(interpolations[0].dtypes) == dict(interpolations[1].dtypes) and len(interpolations[0]) > 10
    assert (jax_sweep / "interpolation.log").read_text().startswith("# in a warm run process")


def test_the_report_of_a_jax_sweep_names_its_backend(jax_smoke_sweep):
    cwd, finished = jax_smoke_sweep
    from tests.helpers import page

    parsed = page.parse((cwd / finished.stdout.strip().splitlines()[-1]).read_text())
    constants = {row[0]: row[1] for row in ([page.text(td) for td in tr.find_all("td")]
                                            for tr in parsed.find_all("tr")) if len(row) == 2}
    assert constants["backend"] == "jax" and constants["jax"].startswith("0.")  # the setting, and its version


def test_the_main_job_on_two_simulated_jax_devices_completes_with_a_verdict(tmp_path):
    """`python -m harness batch_size=8,32,64,128 backend=jax gpus=2 simulate_devices=true -m`, shortened (one seed,
    three epochs on 1,200 samples, no probes): every run data-parallel over two host devices, and a verdict."""
    from tests.conftest import run_harness

    sweep = tmp_path / "sweep"
    proc = run_harness("batch_size=8,32,64,128", "backend=jax", "gpus=2", "simulate_devices=true", "seed=0",
                       "epochs=3", "dataset.num_samples=1200", "probes=false", f"hydra.sweep.dir={sweep}", "-m",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for run in _runs(sweep):
        record = json.loads((run / "run.json").read_text())
        assert record["status"] == "completed" and record["environment"]["strategy"] == "DataParallel"
        assert record["environment"]["replicas"] == 2 and "tensorflow" not in record["environment"]
    assert len(_runs(sweep)) == 4
    from tests.helpers import page

    parsed = page.parse((tmp_path / proc.stdout.strip().splitlines()[-1]).read_text())
    assert page.text(parsed.find("h2", id="verdict")) == "Verdict"
    [verdict] = page.blocks(parsed)
    assert verdict["class"][1] in ("reproduced", "not-reproduced", "inconclusive", "reversed"), page.text(verdict)
