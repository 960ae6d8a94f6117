"""Tests of harness.report, one file per module."""
