"""Image files to model inputs, for every backend: a batch of file paths decoded (and resized, scaled to [0, 1]) by
TensorFlow's tf.io decoders, then a validation mismatch's transform. Shared by the tf.data pipelines
(harness.data.pipelines) and the numpy batches (harness.data.batches); TensorFlow loads only where a batch holds
file paths, so arrays in memory on JAX never load it."""
from __future__ import annotations

from typing import Callable

import numpy as np


def decoder(decode: tuple | None, transform: Callable | None = None) -> Callable | None:
    """A function from a batch of x to model inputs: image files decoded per batch (`decode`: the data set's
    (kind, size, color mode)), then `transform` (a validation mismatch); None when x already holds the inputs and
    nothing applies."""
    return transform if decode is None else file_decoder(decode, transform)


def file_decoder(decode: tuple, transform: Callable | None = None) -> Callable:
    """Batches of image file paths -> image tensors, by tf.io's decoders."""
    from harness.backend import tf

    _, size, color_mode = decode
    channels = 3 if color_mode == "rgb" else 1

    def one(path):
        # three channels first: TensorFlow decodes GIF and BMP files to 3 (or 4) channels only
        image = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
        if channels == 1:
            image = tf.image.rgb_to_grayscale(image)
        return tf.image.resize(image, size) / 255.0  # resize as keras.utils.image_dataset_from_directory does

    def batch(paths):
        images = tf.map_fn(one, paths, fn_output_signature=tf.TensorSpec((*size, channels), tf.float32))
        return images if transform is None else transform(images)

    return batch


def sample_std(x: np.ndarray, decode: tuple | None, samples: int = 512, seed: int = 0) -> float:
    """The training inputs' standard deviation; for files on disk, over a seeded sample of `samples` of them."""
    if decode is None:
        return float(x.std())
    from harness.backend import tf

    chosen = np.random.default_rng(seed).permutation(len(x))[:samples]
    return float(tf.math.reduce_std(decoder(decode)(tf.constant(x[np.sort(chosen)]))).numpy())
