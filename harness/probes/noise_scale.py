"""The gradient noise scale B_simple = tr(Σ)/|G|² (McCandlish et al. 2018), from gradients at two batch sizes.

|G_B|² of a batch of B samples has expectation |G|² + tr(Σ)/B, so squared gradient norms measured at a small
and a big batch size give unbiased estimates of both terms. Pure numpy; harness.probes.in_run feeds it the gradients of
consecutive small batches of training data, whose mean is the big batch's gradient (as gpt-neox does).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SMALL_BATCH = 32  # samples per small batch; the big batch is all of them together


@dataclass(frozen=True)
class NoiseScale:
    grad_norm_sq: float     # |G|², the true gradient's squared norm
    grad_trace_cov: float   # tr(Σ), the per-sample gradient covariance's trace
    noise_scale: float      # B_simple = tr(Σ)/|G|²; nan when the |G|² estimate is not positive

    def as_columns(self) -> dict[str, float]:
        return {"noise_scale": self.noise_scale, "grad_norm_sq": self.grad_norm_sq,
                "grad_trace_cov": self.grad_trace_cov}


def two_batch_estimate(small_sq: float, big_sq: float, small: int, big: int) -> NoiseScale:
    """McCandlish's unbiased estimators from the mean squared gradient norm at batch size `small` and the squared
    norm at batch size `big` (> small)."""
    if not 0 < small < big:
        raise ValueError(f"need 0 < small batch ({small}) < big batch ({big})")
    g2 = (big * big_sq - small * small_sq) / (big - small)
    trace = (small_sq - big_sq) / (1.0 / small - 1.0 / big)
    return NoiseScale(float(g2), float(trace), float(trace / g2) if g2 > 0 else float("nan"))


def from_batch_gradients(gradients: list[np.ndarray], small: int) -> NoiseScale:
    """The estimate from the mean-loss gradients of k equal batches of `small` samples: |G_small|² averaged over
    the k batches, and |G_big|² of their mean, the gradient of all k·small samples."""
    if len(gradients) < 2:
        raise ValueError("need at least two batch gradients")
    small_sq = float(np.mean([g @ g for g in gradients]))
    big = np.mean(gradients, axis=0)
    return two_batch_estimate(small_sq, float(big @ big), small, small * len(gradients))


def gram(gradients: list[np.ndarray]) -> np.ndarray:
    """The k x k inner products g_i·g_j of k batch gradients: all `from_gram` and `resampled` need."""
    stacked = np.asarray(gradients, dtype=np.float64)
    return stacked @ stacked.T


def from_gram(products: np.ndarray, small: int) -> NoiseScale:
    """from_batch_gradients from the k batches' Gram matrix: |G_small|² is the mean of its diagonal, |G_big|² the
    mean of all its entries (the squared norm of the gradients' mean)."""
    products = np.asarray(products, dtype=np.float64)
    return two_batch_estimate(float(np.mean(np.diag(products))), float(np.mean(products)), small,
                              small * len(products))


def resampled(estimates: list[NoiseScale], rng: np.random.Generator) -> tuple[float, float]:
    """(|G|², tr(Σ)) of one bootstrap replicate of several runs' estimates: the runs drawn with replacement and
    their unbiased estimators averaged. (Drawing a run's batches with replacement instead would bias |G|² up:
    a batch drawn twice is perfectly correlated with itself.)"""
    drawn = rng.integers(0, len(estimates), len(estimates))
    return (float(np.mean([estimates[i].grad_norm_sq for i in drawn])),
            float(np.mean([estimates[i].grad_trace_cov for i in drawn])))
