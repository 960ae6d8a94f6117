"""Tests of harness.studies.recover, one file per module."""
