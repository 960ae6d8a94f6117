"""Tests of harness.data, one file per module."""
