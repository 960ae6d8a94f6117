"""McCandlish's two-batch noise-scale estimator on synthetic gradients with a known |G|² and tr(Σ)."""
import numpy as np
import pytest

from harness.probes import noise_scale

G = np.array([0.3, -0.2, 0.1, 0.05] + [0.0] * 16)
SIGMA = np.linspace(0.1, 1.0, 20)  # per-sample gradient standard deviation per coordinate
TRUE_G2, TRUE_TRACE = float(G @ G), float(np.sum(SIGMA ** 2))


def _batch_gradients(rng, batches: int, size: int) -> list[np.ndarray]:
    samples = G + SIGMA * rng.standard_normal((batches, size, len(G)))
    return list(samples.mean(axis=1))


def test_estimates_g2_and_trace_within_ten_percent():
    estimate = noise_scale.from_batch_gradients(_batch_gradients(np.random.default_rng(0), 4000, 16), 16)
    assert estimate.grad_norm_sq == pytest.approx(TRUE_G2, rel=0.1)
    assert estimate.grad_trace_cov == pytest.approx(TRUE_TRACE, rel=0.1)
    assert estimate.noise_scale == pytest.approx(TRUE_TRACE / TRUE_G2, rel=0.15)


def test_the_estimators_are_unbiased_over_repeats():
    rng = np.random.default_rng(1)
    estimates = [noise_scale.from_batch_gradients(_batch_gradients(rng, 8, 32), 32) for _ in range(3000)]
    assert np.mean([e.grad_norm_sq for e in estimates]) == pytest.approx(TRUE_G2, rel=0.1)
    assert np.mean([e.grad_trace_cov for e in estimates]) == pytest.approx(TRUE_TRACE, rel=0.05)


def test_a_non_positive_g2_estimate_gives_no_noise_scale():
    estimate = noise_scale.two_batch_estimate(small_sq=1.0, big_sq=0.01, small=32, big=256)
    assert estimate.grad_norm_sq < 0 and np.isnan(estimate.noise_scale)
    with pytest.raises(ValueError, match="small batch"):
        noise_scale.two_batch_estimate(1.0, 0.5, small=64, big=64)
