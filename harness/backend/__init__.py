"""Keras and the backend it runs on (TensorFlow or JAX) for a run process: the one place that loads either.

`select(name)` fixes the backend before Keras loads (KERAS_BACKEND is read once per process); `keras`, `tf` and
`ops` are loaded on first use, so importing this module costs nothing. `ops` is the backend's share of the
harness (harness.backend.tf_ops or harness.backend.jax_ops): compiled inference, the training-mode batch-norm
moments, the loss's derivatives for the probes, seeding and the versions to record. Code that must run on both
backends takes only `keras` and `ops` from here; `tf` loads TensorFlow whatever the backend (image decoding and
the TensorFlow-only paths use it).

While Keras and TensorFlow load, packages they import but a run never uses are hidden: Keras imports scikit-learn
(for its scikit-learn wrappers) and matplotlib.pyplot (for an image gallery), and TensorFlow's legacy Keras
imports h5py. The harness has them installed (digits data, the report) and uses none of them in a run (checkpoints
are .npz); loading them cost every run process about a second on the 2-core CPU (`python -X importtime`: sklearn
0.71 s, matplotlib.pyplot 0.25 s, h5py 0.14 s). Only packages that every importer guards with `except ImportError`
are listed. On TensorFlow, JAX is hidden too: TensorFlow's TFLite converter imports it when installed (`pip
install harness[jax]`), 0.27 s of every TensorFlow run process, for a converter a run never calls. While the
libraries load they are hidden the way Python documents for an absent module (None in sys.modules), so each takes
its own "not installed" path; afterwards they import as usual.

Python's cyclic garbage collector is paused while the libraries load, and what the first of them loaded is
frozen afterwards (gc.freeze): modules, classes and registries that live as long as the process, about 600,000
objects on TensorFlow, which the collector would otherwise pass over in every full collection (0.17 s each on the
2-core CPU; 9 of them, 0.45 s, in a default batch-8 run). Pausing it while they load saves 0.4 s of the import;
the import leaves about 2,000 objects of garbage behind, a few hundred kilobytes that are never collected.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
import time
from types import ModuleType

BACKENDS = ("tensorflow", "jax")
DEFAULT = "tensorflow"
UNUSED_IN_A_RUN = ("sklearn", "matplotlib", "h5py")
UNUSED_ON_TENSORFLOW = ("jax",)  # imported by tensorflow.lite.python.util, guarded by `except ImportError`
_OPS = {"tensorflow": "harness.backend.tf_ops", "jax": "harness.backend.jax_ops"}
_load_seconds = 0.0  # spent loading Keras and the backend in this process so far


def load_seconds() -> float:
    """Seconds this process has spent loading Keras, its backend and the harness's share of it (`ops`)."""
    return _load_seconds


class BackendError(RuntimeError):
    """The backend asked for cannot be the one this process runs Keras on."""


def select(backend: str, cpu_only: bool = False) -> None:
    """Run Keras on `backend` in this process; `cpu_only` keeps JAX off any GPU. Call before Keras loads; a process
    whose Keras already runs on another backend raises BackendError (the backend is fixed per process)."""
    if backend not in BACKENDS:
        raise BackendError(f"backend={backend!r}: one of {', '.join(BACKENDS)}")
    loaded = loaded_backend()
    if loaded is not None and loaded != backend:
        raise BackendError(f"backend={backend}: this process already runs Keras on {loaded}; the backend is fixed "
                           f"per process (KERAS_BACKEND), so run it in a process of its own")
    os.environ["KERAS_BACKEND"] = backend
    if backend == "jax" and cpu_only and "jax" not in sys.modules:
        os.environ["JAX_PLATFORMS"] = "cpu"


def loaded_backend() -> str | None:
    """The backend Keras runs on in this process, or None before Keras has loaded."""
    keras = sys.modules.get("keras")
    return None if keras is None else keras.backend.backend()


def name() -> str:
    """The backend Keras runs (or will run) on in this process."""
    return loaded_backend() or os.environ.get("KERAS_BACKEND", DEFAULT)


def tensorflow_loaded_on_jax() -> dict[str, str]:
    """{"tensorflow": its version} when a process running Keras on JAX loaded TensorFlow after all (image files
    decode through tf.io), else {}: a run records it as it ends, so run.json names every library it used."""
    tensorflow = sys.modules.get("tensorflow")
    if loaded_backend() != "jax" or tensorflow is None:
        return {}
    return {"tensorflow": getattr(tensorflow, "__version__", "loaded")}


def _load(module: str) -> ModuleType:
    # TensorFlow's C++ info and warnings drown the progress lines; read once, when the library loads
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", DEFAULT)
    unused_here = UNUSED_IN_A_RUN + (UNUSED_ON_TENSORFLOW if name() == "tensorflow" else ())
    hidden = [unused for unused in unused_here if unused not in sys.modules]
    for unused in hidden:
        sys.modules[unused] = None  # `import unused` raises ImportError while this is here
    # frozen only before Keras has loaded, when no model, nothing of a run, can be among the objects to freeze:
    # a frozen model's reference cycles would never be collected (TensorFlow loaded later, on JAX, is not frozen)
    freeze = module not in sys.modules and "keras" not in sys.modules
    collecting = gc.isenabled()
    gc.disable()
    started = time.perf_counter()
    try:
        return importlib.import_module(module)
    finally:
        _count_load(started)
        if freeze:
            gc.freeze()
        if collecting:
            gc.enable()
        for unused in hidden:
            if unused in sys.modules and sys.modules[unused] is None:
                del sys.modules[unused]


def _count_load(started: float) -> None:
    global _load_seconds
    _load_seconds += time.perf_counter() - started


def __getattr__(attribute: str):
    if attribute == "keras":
        value = _load("keras")
    elif attribute == "tf":
        value = _load("tensorflow")
    elif attribute == "ops":
        _load("keras")
        started = time.perf_counter()
        value = importlib.import_module(_OPS[name()])
        _count_load(started)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
    globals()[attribute] = value
    return value
