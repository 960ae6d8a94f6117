import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def data_cache(tmp_path_factory):
    """Generated data goes to a per-session cache, never the user's."""
    path = tmp_path_factory.mktemp("harness-cache")
    os.environ["HARNESS_CACHE"] = str(path)
    return path


def compose_config(*overrides: str):
    """The real Hydra config composed with overrides, as a validated RunConfig."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from harness.cli import CONF_DIR, to_run_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return to_run_config(hydra_compose("config", overrides=list(overrides)))


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


@pytest.fixture(scope="session")
def smoke_sweep(tmp_path_factory):
    """A real tiny multirun (`+study=smoke -m`, two batch sizes), run once for the tests that read it."""
    cwd = tmp_path_factory.mktemp("smoke")
    proc = run_harness("+study=smoke", f"hydra.sweep.dir={cwd / 'sweeps' / 'smoke'}", "hydra.launcher.n_jobs=2", "-m",
                       cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cwd, proc


def assert_largest_batch(compose, n: int, *overrides: str) -> None:
    """batch_size=n is accepted, n + 1 refused with one line naming the training-set size n."""
    from harness.config import ConfigError

    compose(*overrides, f"batch_size={n}")
    with pytest.raises(ConfigError) as err:
        compose(*overrides, f"batch_size={n + 1}")
    assert str(err.value).startswith(f"batch_size={n + 1} is not allowed")
    assert f"training-set size {n}" in str(err.value) and "\n" not in str(err.value)
