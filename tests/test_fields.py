"""Typed config values and the one-line ConfigError (harness.fields)."""
import math

import pytest

from harness import fields
from harness.config import schema
from harness.fields import ConfigError


def test_config_error_is_one_line_naming_key_value_and_what_is_allowed():
    err = ConfigError("batch_size", 0, "an integer >= 1")
    assert str(err) == "batch_size=0 is not allowed: an integer >= 1"
    assert (err.key, err.value, err.allowed) == ("batch_size", 0, "an integer >= 1")
    assert isinstance(err, ValueError) and schema.ConfigError is ConfigError  # still importable from config


def test_unknown_keys_are_named_with_every_valid_one():
    fields.check_keys({"width": 1}, {"width", "name"}, "model.")
    with pytest.raises(ConfigError) as caught:
        fields.check_keys({"name": "mlp", "depth": 3}, {"width", "name"}, "model.")
    assert str(caught.value) == "model.depth=3 is not allowed: unknown key; valid keys are model.name, model.width"


@pytest.mark.parametrize("value", [True, 2.0, "2", None])
def test_int_value_takes_integers_only(value):
    with pytest.raises(ConfigError, match="an integer"):
        fields.int_value({"k": value}, "k")


def test_int_value_bounds_and_display_name():
    assert fields.int_value({"k": 3}, "k", low=3) == 3
    with pytest.raises(ConfigError, match=r"^dataset.num_samples=2 is not allowed: an integer >= 3$"):
        fields.int_value({"k": 2}, "k", low=3, name="dataset.num_samples")


@pytest.mark.parametrize("value", [True, "0.1", None, math.inf, math.nan])
def test_float_value_takes_finite_numbers_only(value):
    with pytest.raises(ConfigError, match="a finite number"):
        fields.float_value({"lr": value}, "lr")


def test_float_value_accepts_integers_as_floats():
    value = fields.float_value({"lr": 1}, "lr")
    assert value == 1.0 and isinstance(value, float)


def test_bool_value_and_choice():
    assert fields.bool_value({"shuffle": False}, "shuffle") is False
    with pytest.raises(ConfigError, match=r"^shuffle='false' is not allowed: true or false$"):
        fields.bool_value({"shuffle": "false"}, "shuffle")
    assert fields.choice({"budget": "steps"}, "budget", ("epochs", "steps")) == "steps"
    with pytest.raises(ConfigError, match=r"^budget='time' is not allowed: one of epochs, steps$"):
        fields.choice({"budget": "time"}, "budget", ("epochs", "steps"))
