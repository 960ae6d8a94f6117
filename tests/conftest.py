import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.helpers import backends

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parent.parent
if backends.current() != "tensorflow":  # a child pytest running a test's case on another backend
    from harness import backend as _backend

    _backend.select(backends.current(), cpu_only=True)


@pytest.fixture(scope="module", params=backends.BACKENDS)
def backend(request) -> str:
    """The Keras backend a test's case runs on; the cases of the other backend run in a child pytest."""
    return request.param


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    """The cases for another backend run together in one child pytest (tests/helpers/backends.py): pytest-xdist
    (`--dist loadgroup`) gives them all to one worker, so no worker waits while another's child runs them.
    (Handing the `slow` tests out first was measured slower: 837 s against 806 s, the long tests then contending
    with each other for the two cores.)"""
    for item in items:
        wanted = backends.case_backend(item)
        if wanted is not None and not backends.here(wanted):
            item.add_marker(pytest.mark.xdist_group(f"backend-{wanted}"))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A case for another backend than this process's runs in a child pytest on that backend, which decides."""
    wanted = backends.case_backend(pyfuncitem)
    if wanted is None or backends.here(wanted):
        return None
    backends.run_in_child(pyfuncitem, wanted)
    return True


def shared_folder(tmp_path_factory) -> Path:
    """A folder every pytest-xdist worker of this test run sees (the parent of the workers' own temporary
    folders); the run's own temporary folder without xdist."""
    if os.environ.get(backends.SHARED):  # a child pytest of another backend's cases: its parent's
        return Path(os.environ[backends.SHARED])
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build: Callable[[Path], dict]) -> tuple[Path, dict]:
    """`build(folder)` run once per test run whatever the number of workers (the first to ask builds, under a
    file lock, the others wait and read what it returned); a build that fails is tried again by the next."""
    root = shared_folder(tmp_path_factory)
    folder, done = root / f"shared-{name}", root / f"shared-{name}.json"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            done.write_text(json.dumps(build(folder)))
    return folder, json.loads(done.read_text())


@pytest.fixture(scope="session", autouse=True)
def data_cache(tmp_path_factory):
    """Generated data goes to one cache for the whole test run (its writes are atomic, so workers may share it),
    never the user's."""
    backends.shared = shared_folder(tmp_path_factory)  # handed to a child pytest: the same sweeps and caches
    path = backends.shared / "harness-cache"
    path.mkdir(exist_ok=True)
    os.environ["HARNESS_CACHE"] = str(path)
    return path


@pytest.fixture(autouse=True)
def no_signal_left_over():
    """A test that records a signal (harness.run.stop) or holds them (harness.launch.signals) and fails before it
    clears them leaves no signal for the next test's scheduler to act on."""
    from harness.launch import signals
    from harness.run import stop

    yield
    stop.clear()
    signals._holding = False


def compose_config(*overrides: str):
    """The real Hydra config composed with overrides, as a validated RunConfig (composed as the harness composes a
    job: once a process for the same overrides and files, harness.config.hydra_internals.compose)."""
    from hydra import initialize_config_dir

    from harness.config import hydra_internals
    from harness.config.compose import CONF_DIR, to_run_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return to_run_config(hydra_internals.compose("config", overrides=list(overrides)))


@pytest.fixture
def compose():
    """Compose the real Hydra config with overrides and return it as a validated RunConfig."""
    return compose_config


def run_harness(*args: str, cwd: Path, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )


# Small, fast settings for real runs: 600 MNIST-1D samples (480 train / 120 validation), no probes (they and the
# sweep's interpolation process would double the suite's time; the tests that exercise them add probes=true).
TINY = ["dataset.num_samples=600", "epochs=2", "probes=false", "seed=0"]


@dataclass(frozen=True)
class Finished:
    """A finished command, as a test reads it back: its exit code and output."""
    returncode: int
    stdout: str
    stderr: str


def _shared_sweep(tmp_path_factory, name: str, *args: str) -> tuple[Path, Finished]:
    """`python -m harness ARGS -m` into <folder>/sweeps/<name>, run once per test run for every test that only
    reads its files (a test that changes them copies the folder first: `copy_sweep`)."""
    def build(cwd: Path) -> dict:
        proc = run_harness(*args, f"hydra.sweep.dir={cwd / 'sweeps' / name}", "-m", cwd=cwd)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}

    cwd, result = built_once(tmp_path_factory, name, build)
    return cwd, Finished(**result)


@pytest.fixture(scope="session")
def smoke_sweep(tmp_path_factory):
    """A real tiny multirun with the probes on (`+study=smoke -m`: batch 16 and 64, two runs at once), for the
    tests that read it: its files, its report, its TensorBoard events, its probes and interpolation."""
    return _shared_sweep(tmp_path_factory, "smoke", "+study=smoke", "probe_samples=256", "hydra.launcher.n_jobs=2")


@pytest.fixture(scope="session")
def jax_smoke_sweep(tmp_path_factory):
    """The smoke sweep's command on Keras's JAX backend (backend=jax): its run processes never load TensorFlow."""
    return _shared_sweep(tmp_path_factory, "smoke-jax", "+study=smoke", "probe_samples=256", "hydra.launcher.n_jobs=2",
                         "backend=jax")


@pytest.fixture(scope="session", params=backends.BACKENDS)
def smoke_sweeps(request):
    """(folder the command ran in, the finished command, the sweep's folder) of the smoke sweep on each backend."""
    name = {"tensorflow": "smoke", "jax": "smoke-jax"}[request.param]
    cwd, finished = request.getfixturevalue({"tensorflow": "smoke_sweep", "jax": "jax_smoke_sweep"}[request.param])
    return cwd, finished, cwd / "sweeps" / name


# the shared sweep without probes: three tiny runs one after another in one warm worker
PLAIN_SWEEP = [*TINY, "batch_size=16,64,32", "hydra.launcher.n_jobs=1"]


# One run trained uninterrupted for the fault tests that stop a run and resume it (SIGTERM, kill -9): their resumed
# runs' metrics must equal its metrics. Long enough to be stopped between its second and its last epoch under load;
# probes on, so their per-epoch columns must come out of a resume as they would without one.
REFERENCE_RUN = ["dataset.num_samples=1000", "epochs=15", "seed=0", "probes=true", "probe_samples=64", "batch_size=8"]


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory) -> Path:
    """The folder of `python -m harness REFERENCE_RUN`, trained once per test run."""
    def build(cwd: Path) -> dict:
        proc = run_harness(*REFERENCE_RUN, f"hydra.run.dir={cwd / 'run'}", cwd=cwd)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return {}

    folder, _ = built_once(tmp_path_factory, "reference", build)
    return folder / "run"


@pytest.fixture(scope="session")
def plain_sweep(tmp_path_factory):
    """A real tiny multirun without probes (PLAIN_SWEEP: three runs in turn in one warm worker process)."""
    return _shared_sweep(tmp_path_factory, "plain", *PLAIN_SWEEP)


# A sweep of 1,000 runs as a user outgrowing the main job makes one: 5 batch sizes x 10 learning rates x 2 optimizers x
# 10 seeds (20 facets), 2 epochs each.
THOUSAND = ["batch_size=8,16,32,64,128", "lr=0.0001,0.0002,0.0005,0.001,0.002,0.005,0.01,0.02,0.05,0.1",
            "optimizer=adam,sgd", "seed=0,1,2,3,4,5,6,7,8,9", "epochs=2"]


@pytest.fixture(scope="session")
def thousand_runs(tmp_path_factory) -> Path:
    """THOUSAND's runs as constructed folders with the probes' files (tests.helpers.sweeps), built once per test
    run for the tests that read them (a test that changes them copies the folder first: `copy_sweep`)."""
    from tests.helpers.sweeps import study_sweep

    def build(folder: Path) -> dict:
        study_sweep(folder / "sweep", *THOUSAND, probes=True)
        return {}

    folder, _ = built_once(tmp_path_factory, "thousand", build)
    return folder / "sweep"


def copy_sweep(shared: Path, into: Path) -> Path:
    """A copy of a shared sweep folder that a test may change (damage, resume, remount)."""
    return Path(shutil.copytree(shared, into, symlinks=True))


def assert_largest_batch(compose, n: int, *overrides: str) -> None:
    """batch_size=n is accepted, n + 1 refused with one line naming the training-set size n."""
    from harness.config.schema import ConfigError

    compose(*overrides, f"batch_size={n}")
    with pytest.raises(ConfigError) as err:
        compose(*overrides, f"batch_size={n + 1}")
    assert str(err.value).startswith(f"batch_size={n + 1} is not allowed")
    assert f"training-set size {n}" in str(err.value) and "\n" not in str(err.value)
