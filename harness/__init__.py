"""Batch-size experiment harness: Hydra sweeps of Keras runs, per-epoch parquet, one HTML report."""
__version__ = "0.1.0"
