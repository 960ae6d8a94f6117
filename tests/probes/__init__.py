"""Tests of harness.probes, one file per module."""
