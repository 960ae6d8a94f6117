"""Models by name: a dict registry of builders. Keras is imported inside the builders, so config validation
can read the names without loading TensorFlow."""
from __future__ import annotations

from typing import Callable


def _units(base: int, width: float) -> int:
    return max(1, int(round(base * width)))


def _block(x, layer, batch_norm: bool, sync: bool = False):
    """layer -> [batch norm] -> relu; the layer has no bias when batch norm follows it.

    Under data parallelism each replica normalises over its own slice of the batch, as Keras does by default;
    `sync` makes it use the statistics of the whole global batch (cross-replica all-reduce).
    """
    from keras import layers

    x = layer(x)
    if batch_norm:
        x = layers.BatchNormalization(synchronized=sync)(x)
    return layers.Activation("relu")(x)


def convnet(input_shape: tuple[int, ...], num_classes: int, width: float, batch_norm: bool, sync: bool = False):
    """conv32-pool-conv64-pool-dense64-softmax; Conv1D for (length, channels) inputs, Conv2D for images."""
    import keras
    from keras import layers

    two_d = len(input_shape) == 3
    conv = (lambda f: layers.Conv2D(f, 3, padding="same", use_bias=not batch_norm)) if two_d else (
        lambda f: layers.Conv1D(f, 5, padding="same", use_bias=not batch_norm)
    )
    pool = layers.MaxPooling2D if two_d else layers.MaxPooling1D
    inputs = keras.Input(shape=input_shape)
    x = pool(2)(_block(inputs, conv(_units(32, width)), batch_norm, sync))
    x = pool(2)(_block(x, conv(_units(64, width)), batch_norm, sync))
    x = layers.Flatten()(x)
    x = _block(x, layers.Dense(_units(64, width), use_bias=not batch_norm), batch_norm, sync)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="convnet")


def mlp(input_shape: tuple[int, ...], num_classes: int, width: float, batch_norm: bool, sync: bool = False):
    """Two hidden dense layers of 128 x width units."""
    import keras
    from keras import layers

    inputs = keras.Input(shape=input_shape)
    x = layers.Flatten()(inputs)
    for _ in range(2):
        x = _block(x, layers.Dense(_units(128, width), use_bias=not batch_norm), batch_norm, sync)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="mlp")


MODELS: dict[str, Callable] = {"convnet": convnet, "mlp": mlp}
MODEL_NAMES = tuple(MODELS)


def build(model_cfg, input_shape: tuple[int, ...], num_classes: int):
    """Build (not compile) the model named in `model_cfg` (a ModelConfig) for inputs of `input_shape`."""
    return MODELS[model_cfg.name](
        input_shape, num_classes, width=model_cfg.width, batch_norm=model_cfg.batch_norm,
        sync=model_cfg.sync_batchnorm,
    )


def batchnorm_mode(model_cfg, replicas: int) -> str:
    """Which batch normalisation ran, for the run's record."""
    if not model_cfg.batch_norm:
        return "none"
    if replicas < 2:
        return "single replica"
    return "synchronized across replicas" if model_cfg.sync_batchnorm else "per replica"
