"""Tests of harness.studies.tuned, one file per module."""
