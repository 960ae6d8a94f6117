"""Tests of harness.assess, one file per module."""
