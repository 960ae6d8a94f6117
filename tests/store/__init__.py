"""Tests of harness.store, one file per module."""
