"""A real prepared TFDS data set for the tests, written by tensorflow-datasets itself (offline: a tiny builder
whose examples are generated), so the files the command reads are the ones TFDS writes.

`python -m tests.helpers.tfds_data FOLDER` prepares `tiny_clusters` (3 classes of 4x4x1 float clusters, 90
train and 30 test examples) under FOLDER.
"""
from __future__ import annotations

import sys

NAME = "tiny_clusters"
SPLITS = {"train": 90, "test": 30}


def prepare(data_dir: str) -> None:
    import numpy as np
    import tensorflow_datasets as tfds

    class TinyClusters(tfds.core.GeneratorBasedBuilder):
        VERSION = tfds.core.Version("1.0.0")

        def _info(self):
            features = tfds.features.FeaturesDict({
                "image": tfds.features.Tensor(shape=(4, 4, 1), dtype=np.float32),
                "label": tfds.features.ClassLabel(names=["a", "b", "c"])})
            return tfds.core.DatasetInfo(builder=self, features=features, supervised_keys=("image", "label"))

        def _split_generators(self, dl_manager):
            return {split: self._generate_examples(n, seed) for seed, (split, n) in enumerate(SPLITS.items())}

        def _generate_examples(self, n, seed):
            rng = np.random.default_rng(seed)
            for i in range(n):
                image = (rng.normal(0, 0.3, (4, 4, 1)) + i % 3).astype(np.float32)
                yield i, {"image": image, "label": i % 3}

    TinyClusters.name = NAME
    TinyClusters(data_dir=data_dir).download_and_prepare()


if __name__ == "__main__":
    prepare(sys.argv[1])
