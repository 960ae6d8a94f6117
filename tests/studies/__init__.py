"""Tests of harness.studies: its registry, and one folder per study, one file per module."""
