"""The probes in real runs: per-epoch columns, probes.json, kept weights, the sweep's interpolation."""
import json

import numpy as np
import pandas as pd
import pytest

from harness.probes import in_run as probes
from harness.probes import interpolation
from harness.store import layout
from tests.conftest import TINY, copy_sweep, run_harness

PROBE_COLUMNS = ["noise_scale", "grad_norm_sq", "grad_trace_cov", "weight_distance"]


@pytest.fixture
def probed_sweep(smoke_sweep):
    """The shared smoke sweep (conftest): batch 16 and 64, probes on, probe_samples=256."""
    cwd, proc = smoke_sweep
    return cwd / "sweeps" / "smoke", proc


@pytest.mark.slow  # reads a shared real sweep
def test_every_epoch_has_the_noise_scale_and_the_distance_travelled(probed_sweep):
    sweep, _ = probed_sweep
    for job in ("0", "1"):
        frame = pd.read_parquet(sweep / job / "metrics.parquet")
        assert set(PROBE_COLUMNS) <= set(frame.columns)
        assert (frame["grad_trace_cov"] > 0).all() and frame["grad_norm_sq"].notna().all()
        positive = frame["grad_norm_sq"] > 0  # the noise scale is their ratio where |G|² came out positive
        np.testing.assert_allclose(frame.loc[positive, "noise_scale"],
                                   frame.loc[positive, "grad_trace_cov"] / frame.loc[positive, "grad_norm_sq"])
        assert frame["weight_distance"].is_monotonic_increasing and (frame["weight_distance"] > 0).all()
        assert (frame["probes"] == True).all() and (frame["probe_samples"] == 256).all()  # noqa: E712


@pytest.mark.slow  # reads a shared real sweep
def test_probes_json_holds_curvature_and_sharpness_and_the_weights_are_kept(probed_sweep):
    sweep, _ = probed_sweep
    values = json.loads((sweep / "0" / layout.PROBES_FILE).read_text())
    assert values["error"] is None and values["probe_samples"] == 256
    assert values["hessian_top_eigenvalue"] > 0 and values["eigen_converged"]
    assert values["hessian_trace"] >= values["hessian_top_eigenvalue"] * 0.5  # trace ≥ λmax for a PSD-ish H
    assert values["sharpness"] > values["sharpness_5e-4"] > 0  # a bigger box holds a higher loss
    initial, trainable = probes.load_weights(sweep / "0" / layout.INITIAL_WEIGHTS)
    final, _ = probes.load_weights(sweep / "0" / layout.FINAL_WEIGHTS)
    assert trainable.any() and len(initial) == len(final)
    distance = np.sqrt(sum(np.sum((f - i) ** 2) for f, i, t in zip(final, initial, trainable) if t))
    last = pd.read_parquet(sweep / "0" / "metrics.parquet")["weight_distance"].iloc[-1]
    assert distance == pytest.approx(last, rel=1e-5)


@pytest.mark.slow  # reads a shared real sweep
def test_each_runs_eigenvalue_matches_scipys_lanczos_and_its_trace_states_its_error(probed_sweep):
    """On the same trained weights and probe samples, SciPy's eigsh (ARPACK) is the reference."""
    from benchmarks import probe_accuracy

    rows = probe_accuracy.accuracy(probed_sweep[0])
    assert [r["batch_size"] for r in rows] == [16, 64]
    for row in rows:
        assert row["eigen_converged"] and row["eigen_difference"] < 0.01, row
        assert row["trace_relative_error"] <= 0.05 or not row["trace_converged"], row
    assert "Largest relative eigenvalue difference from eigsh" in probe_accuracy.table(probed_sweep[0], rows)


@pytest.mark.slow  # reads a shared real sweep
def test_the_interpolation_starts_and_ends_at_the_two_runs_own_final_metrics(probed_sweep):
    sweep, proc = probed_sweep
    curve = pd.read_parquet(sweep / layout.INTERPOLATION_FILE)
    assert len(curve) == len(interpolation.ALPHAS) >= 25
    assert curve["alpha"].min() == -1 and curve["alpha"].max() == 2
    assert set(curve["pair"]) == {"seed=0"} and (curve["small_batch"] == 16).all() and (curve["large_batch"] == 64).all()
    for alpha, job in ((0.0, "0"), (1.0, "1")):
        point = curve[curve["alpha"] == alpha].iloc[0]
        final = pd.read_parquet(sweep / job / "metrics.parquet").iloc[-1]
        assert point["train_loss"] == pytest.approx(final["train_eval_loss"], rel=1e-4)
        assert point["train_acc"] == pytest.approx(final["train_eval_acc"], abs=1e-6)
        assert point["val_loss"] == pytest.approx(final["val_loss"], rel=1e-4)
        assert point["val_acc"] == pytest.approx(final["val_acc"], abs=1e-6)
    assert proc.stdout.strip().splitlines()[-1].endswith(".html")  # the report's path is still the last line


@pytest.mark.slow  # reads a shared real sweep
def test_a_model_kept_from_an_earlier_pair_gives_the_curve_a_model_of_its_own_gives(probed_sweep):
    from harness.run.interpolation import interpolate

    sweep = probed_sweep[0]
    pair = interpolation.pairs(sweep)[0]
    built: dict = {}
    first = interpolate(sweep, pair, built=built)
    model = next(iter(built.values()))[0]
    again = interpolate(sweep, pair, built=built)  # the same model, its weights set again at every α
    assert next(iter(built.values()))[0] is model and len(built) == 1
    pd.testing.assert_frame_equal(again, first, check_exact=True)
    pd.testing.assert_frame_equal(interpolate(sweep, pair), first, check_exact=True)


@pytest.mark.slow  # reads a shared real sweep
def test_the_interpolation_runs_warm_and_harness_probe_recomputes_it(probed_sweep, tmp_path):
    from harness.launch.sweep_end import WARM
    from harness.run.interpolation import main

    # the sweep made it in a run process its runs had left warm, without a start-up of its own; the command
    # recomputes the same curve in a fresh one
    assert (probed_sweep[0] / layout.INTERPOLATION_LOG).read_text().startswith(WARM)
    sweep = copy_sweep(probed_sweep[0], tmp_path / "smoke")  # the shared one stays as it was
    target = sweep / layout.INTERPOLATION_FILE
    before = pd.read_parquet(target)
    target.unlink()
    assert interpolation.needs_update(sweep)
    assert main([str(sweep)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(target), before, check_exact=False, rtol=1e-6)
    assert not interpolation.needs_update(sweep)
    assert main([str(tmp_path / "nowhere")]) == 2


@pytest.mark.slow  # reads a shared real sweep
def test_probes_false_measures_nothing_and_keeps_no_weights(plain_sweep):
    sweep = plain_sweep[0] / "sweeps" / "plain"  # three batch sizes with probes=false
    frame = pd.read_parquet(sweep / "0" / "metrics.parquet")
    assert not set(PROBE_COLUMNS) & set(frame.columns)
    assert not any((sweep / "0" / name).exists()
                   for name in (layout.PROBES_FILE, layout.INITIAL_WEIGHTS, layout.FINAL_WEIGHTS))
    assert not (sweep / layout.INTERPOLATION_FILE).exists() and not interpolation.pairs(sweep)


def test_probe_samples_below_two_is_refused_in_one_line(tmp_path):
    proc = run_harness("probe_samples=1", cwd=tmp_path)
    assert proc.returncode == 2 and not (tmp_path / "sweeps").exists()
    assert proc.stderr.strip().count("\n") == 0 and "probe_samples" in proc.stderr and "1" in proc.stderr


def test_a_failing_probe_is_recorded_and_the_run_still_completes(compose, tmp_path, monkeypatch):
    from harness.run.experiment import run_experiment

    def broken(*args, **kwargs):
        raise RuntimeError("no second derivative for this op")

    monkeypatch.setattr(probes, "final_probes", broken)
    cfg = compose(*TINY, "probes=true", "batch_size=32", "epochs=1")
    run_experiment(cfg, tmp_path / "0", run_id="s/0")
    record = json.loads((tmp_path / "0" / "run.json").read_text())
    values = json.loads((tmp_path / "0" / layout.PROBES_FILE).read_text())
    assert record["status"] == "completed"
    assert values["error"] == "RuntimeError: no second derivative for this op"


def test_the_end_of_run_probes_run_with_the_garbage_collector_paused(monkeypatch):
    """SciPy's bounds start full collections over every object of the run: the probes run with the collector
    paused, and it runs again afterwards, after a probe that raised too; a caller that paused it keeps it paused."""
    import gc

    seen = []

    def measure(*args):
        seen.append(gc.isenabled())
        return {"seconds": 0.0}

    monkeypatch.setattr(probes, "_final_probes", measure)
    assert gc.isenabled()
    assert probes.final_probes(None, np.zeros((4, 1)), np.zeros(4), None, 4) == {"seconds": 0.0}
    assert seen == [False] and gc.isenabled()

    def broken(*args):
        raise MemoryError

    monkeypatch.setattr(probes, "_final_probes", broken)
    with pytest.raises(MemoryError):
        probes.final_probes(None, np.zeros((4, 1)), np.zeros(4), None, 4)
    assert gc.isenabled()
    monkeypatch.setattr(probes, "_final_probes", measure)
    gc.disable()
    try:
        probes.final_probes(None, np.zeros((4, 1)), np.zeros(4), None, 4)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.slow
def test_probes_under_data_parallelism_measure_the_trained_weights(tmp_path):
    """Two simulated devices (MirroredStrategy): the probes run on a single-device twin of the trained model."""
    run_dir = tmp_path / "run"
    proc = run_harness(*TINY, "probes=true", "batch_size=32", "gpus=2", "simulate_devices=true", "probe_samples=128",
                       f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    values = json.loads((run_dir / layout.PROBES_FILE).read_text())
    frame = pd.read_parquet(run_dir / "metrics.parquet")
    assert values["error"] is None and values["hessian_top_eigenvalue"] > 0
    assert (frame["replicas"] == 2).all() and (frame["grad_trace_cov"] > 0).all()
