"""TensorFlow and Keras for a run process, loaded without optional packages they import but the harness never uses.

When these are installed, Keras imports scikit-learn (for its scikit-learn wrappers) and matplotlib.pyplot (for an
image gallery), and TensorFlow's legacy Keras imports h5py, all while `import tensorflow` runs. The harness has
them installed (digits data, the report) and uses none of them in a run (checkpoints are .npz); loading them cost
every run process about a second on the 2-core CPU (`python -X importtime`: sklearn 0.71 s, matplotlib.pyplot
0.25 s, h5py 0.14 s). Only packages that every importer guards with `except ImportError` are listed: requests
(imported unguarded by tf.distribute) and pandas (pyarrow loads it to write any parquet file) stay. While
TensorFlow loads they are hidden the way Python documents for an absent module (None in sys.modules), so each
library takes its own "not installed" path; afterwards they import as usual. Import TensorFlow and Keras from
here in code that runs in a run process.
"""
from __future__ import annotations

import os
import sys

UNUSED_IN_A_RUN = ("sklearn", "matplotlib", "h5py")


def _load():
    # TensorFlow's C++ info and warnings drown the progress lines; read once, when the library loads
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    hidden = [name for name in UNUSED_IN_A_RUN if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # `import name` raises ImportError while this is here
    try:
        import keras
        import tensorflow as tf
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return tf, keras


tf, keras = _load()
