import numpy as np
import pytest

from harness import models
from harness.config import ModelConfig


@pytest.mark.parametrize("input_shape,conv", [((40, 1), "Conv1D"), ((8, 8, 1), "Conv2D"), ((32, 32, 3), "Conv2D")])
def test_convnet_adapts_to_1d_and_2d_inputs(input_shape, conv):
    model = models.build(ModelConfig("convnet", 1.0, False), input_shape, 10)
    kinds = [type(layer).__name__ for layer in model.layers]
    assert kinds.count(conv) == 2 and kinds.count("Dense") == 2
    filters = [layer.filters for layer in model.layers if type(layer).__name__ == conv]
    assert filters == [32, 64]
    out = model(np.zeros((3, *input_shape), np.float32))
    assert out.shape == (3, 10) and np.allclose(np.asarray(out).sum(axis=1), 1.0, atol=1e-5)


def test_width_multiplies_units_and_batch_norm_adds_layers():
    narrow = models.build(ModelConfig("convnet", 1.0, False), (40, 1), 10)
    wide = models.build(ModelConfig("convnet", 2.0, True), (40, 1), 10)
    assert [l.filters for l in wide.layers if hasattr(l, "filters")] == [64, 128]
    assert sum(type(l).__name__ == "BatchNormalization" for l in wide.layers) == 3
    assert wide.count_params() > 2 * narrow.count_params()


def test_mlp_builds_for_any_input_shape():
    for shape in [(40, 1), (8, 8, 1)]:
        model = models.build(ModelConfig("mlp", 0.5, False), shape, 10)
        assert [l.units for l in model.layers if type(l).__name__ == "Dense"] == [64, 64, 10]
        assert model(np.zeros((2, *shape), np.float32)).shape == (2, 10)
