"""Tests of harness.studies.scaling, one file per module."""
