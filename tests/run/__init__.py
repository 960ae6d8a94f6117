"""Tests of harness.run, one file per module."""
