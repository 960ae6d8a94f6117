"""Installed as a tool: a wheel of the harness in a fresh virtual environment runs a sweep from the user's own
project folder (outside this checkout), with their own dataset and study configs (`--config-dir conf`).

Offline: the new environment gets its dependencies from this environment's site-packages through a .pth path
line (a plain path line does not process that folder's own .pth files, so this checkout's editable install is
not seen there, and `import harness` finds the wheel).
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO
from tests.helpers.user_data import write_npz

pytestmark = pytest.mark.slow


def _run(cmd, cwd, timeout=300, env=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A wheel built from a copy of the package's sources, installed into a new venv; its python."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"  # build from a copy: nothing is written into the checkout
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("harness", "hydra_plugins"):
        shutil.copytree(REPO / folder, src / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", ".",
          "-w", base / "dist"], cwd=src)
    wheel, = (base / "dist").glob("harness-*.whl")

    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=base)
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=base).stdout.strip())
    (site / "dev_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", wheel], cwd=base)
    return python, venv


def test_a_wheel_runs_a_sweep_from_the_users_project_with_their_configs(installed, tmp_path):
    python, venv = installed
    project = tmp_path / "myproject"
    assert not project.is_relative_to(REPO)
    (project / "data").mkdir(parents=True)
    write_npz(project / "data" / "features.npz", np.repeat([0, 1, 2], 40), features=5)
    conf = project / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "study").mkdir()
    data_path = project / "data" / "features.npz"
    (conf / "dataset" / "mydata.yaml").write_text(f"name: npz\npath: {data_path}\nval_fraction: 0.2\ndata_seed: 42\n")
    (conf / "study" / "mystudy.yaml").write_text(textwrap.dedent("""\
        # @package _global_
        epochs: 1
        hydra:
          sweeper:
            params:
              batch_size: 16,64
        """))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    where = _run([python, "-c", "import harness, harness.config.compose, hydra_plugins.harness_launcher as l; "
                  "print(harness.__file__); print(harness.config.compose.CONF_DIR); print(l.__file__)"], cwd=project, env=env)
    module, conf_dir, launcher = (Path(line) for line in where.stdout.split())
    for path in (module, conf_dir, launcher):
        assert path.is_relative_to(venv) and not path.is_relative_to(REPO), where.stdout
    assert (conf_dir / "config.yaml").is_file() and (conf_dir / "dataset" / "npz.yaml").is_file()

    proc = subprocess.run([python, "-m", "harness", "--config-dir", "conf", "dataset=mydata", "+study=mystudy", "seed=0",
                           "probes=false", "hydra.launcher.n_jobs=1", "-m", "hydra.sweep.dir=sw"], cwd=project, capture_output=True, text=True,
                          timeout=400, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads((project / "sw" / job / "run.json").read_text()) for job in ("0", "1")]
    assert sorted(r["config"]["batch_size"] for r in records) == [16, 64]
    for record in records:
        assert record["status"] == "completed" and record["epochs_completed"] == 1
        assert record["config"]["epochs"] == 1 and record["config"]["dataset"] == "npz"
        assert record["config"]["dataset.path"] == str(data_path)
    report = project / proc.stdout.strip().splitlines()[-1]
    assert report.is_file() and report.is_relative_to(project / "reports")
    assert not (REPO / "sw").exists()
