"""Tests of harness.studies.diagnose, one file per module."""
