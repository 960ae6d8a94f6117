import numpy as np
import pytest

from harness.config.schema import ModelConfig
from harness.models import registry as models


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


@pytest.mark.parametrize("name,norms", [("convnet", 3), ("mlp", 2)])
def test_ghost_batch_size_builds_ghost_batch_norm_that_trains(name, norms):
    from harness.backend import keras
    from harness.models.layers import GhostBatchNormalization

    model_cfg = ModelConfig(name, 1.0, True, ghost_batch_size=4)
    model = models.build(model_cfg, (40, 1), 10)
    ghosts = [layer for layer in model.layers if isinstance(layer, GhostBatchNormalization)]
    assert len(ghosts) == norms and all(layer.ghost_batch_size == 4 for layer in ghosts)
    assert not any(type(layer) is keras.layers.BatchNormalization for layer in model.layers)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(10, 40, 1)).astype(np.float32), rng.integers(0, 10, 10)  # chunks of 4, 4 and 2
    before = [w.copy() for w in model.get_weights()]
    loss = model.train_on_batch(x, y)
    assert np.isfinite(loss) and all(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))
    assert {models.batchnorm_mode(model_cfg, replicas) for replicas in (1, 2)} == {"ghost batch norm (chunks of 4)"}
