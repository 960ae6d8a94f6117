"""Tests of harness.launch, one file per module."""
