"""Tests of harness.models, one file per module."""
