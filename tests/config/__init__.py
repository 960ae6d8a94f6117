"""Tests of harness.config (and the study presets it composes), one file per module."""
