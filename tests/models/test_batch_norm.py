"""A model's batch-norm layers known before it trains (harness.models.batch_norm): a built-in model's from its config,
which must agree with the model Keras builds, and any other model's built in a process of its own."""
import pytest

from harness.config.schema import ConfigError, ModelConfig
from harness.models import batch_norm
from harness.models import registry as models


@pytest.mark.parametrize("name", ["convnet", "mlp"])
@pytest.mark.parametrize("momentum", [None, 0.9])
def test_a_builtin_models_config_says_what_keras_builds(name, momentum):
    """The config's count and momentum (Keras's default, or model.bn_momentum) are the built model's: a Keras whose
    BatchNormalization default moved, or a built-in model with another number of layers, fails here."""
    for norm in (True, False):
        model_cfg = ModelConfig(name, 1.0, norm, bn_momentum=momentum if norm else None)
        built = batch_norm.of_model(models.build(model_cfg, (40, 1), 10))
        assert batch_norm.of_config(model_cfg) == built
        assert built.layers == (batch_norm.BUILTIN_LAYERS[name] if norm else 0)
    assert batch_norm.of_config(ModelConfig(name, 1.0, True)).largest == 0.99


def test_a_model_that_fails_to_build_is_refused_naming_its_key(tmp_path, monkeypatch):
    (tmp_path / "broken_models.py").write_text("def broken(input_shape, num_classes):\n    raise RuntimeError('no')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    model_cfg = ModelConfig("custom", source="custom", target="broken_models.broken")
    with pytest.raises(ConfigError) as err:
        batch_norm.find(model_cfg, (40, 1), 10, "jax")
    message = str(err.value)
    assert message.startswith("model._target_='broken_models.broken'") and "RuntimeError: no" in message
    assert batch_norm.find(model_cfg, None, 10, "jax") is None  # the data's shape unknown before loading
