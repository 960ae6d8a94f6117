"""The tests' `python -m harness` (tests/helpers/preloaded.py, behind conftest's run_harness): a command forked from
the preloaded interpreter answers as a fresh one, and what makes that true holds."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import preloaded
from tests.helpers.runs import harness_processes

REPO = Path(__file__).resolve().parent.parent


def test_a_forked_command_answers_as_a_fresh_one(tmp_path):
    """The same bad input (a one-line error, exit 2) and a `--help` give the same exit code, stdout and stderr,
    forked or fresh, with the environment and working directory each was given."""
    env = {**os.environ, "HARNESS_THREADS": "1"}  # a variable read at run time: still forked
    assert preloaded.forkable(env)
    for args in (["batch_size=0"], ["--help"]):
        forked = preloaded.run(args, tmp_path, env, timeout=120)
        fresh = subprocess.run([sys.executable, "-m", "harness", *args], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=120, check=False)
        assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert forked.returncode == 0 and "batch_size" in forked.stdout
    assert not list(tmp_path.iterdir())  # neither wrote anything where it ran


def test_an_environment_python_reads_at_start_gets_a_fresh_process():
    env = dict(os.environ)
    assert preloaded.forkable({**env, "HARNESS_CACHE": "/elsewhere", "PYTEST_CURRENT_TEST": "another"})
    assert not preloaded.forkable({**env, "PYTHONPATH": "/elsewhere"})
    assert not preloaded.forkable({**env, "OPENBLAS_NUM_THREADS": "1"})  # read when numpy is imported
    assert not preloaded.forkable({key: value for key, value in env.items() if key != "PATH"})


def test_a_command_past_its_timeout_is_killed_with_its_runs(tmp_path):
    sweep = tmp_path / "sweep"
    with pytest.raises(subprocess.TimeoutExpired):
        preloaded.run(["epochs=200", "batch_size=8,16", f"hydra.sweep.dir={sweep}", "-m"], tmp_path,
                      dict(os.environ), timeout=3)
    deadline = time.monotonic() + 60  # its run processes die with it (PR_SET_PDEATHSIG), at once
    while harness_processes(str(sweep)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not harness_processes(str(sweep))


def _reads_at_import(path: Path) -> list[str]:
    """Lines of a module that read the environment or the working directory outside any function: at import."""
    found = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "getcwd", "cwd"):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def test_no_module_the_server_imports_reads_its_environment_at_import():
    """What lets a command fork from an interpreter that imported the harness under another environment and
    working directory: none of the modules of this repository it imports reads them in its top-level code (MLflow's
    store, which sets MLflow's variables when imported, is one a main process never imports)."""
    code = ("import importlib, json, sys\n"
            f"for name in {preloaded.PRELOAD!r}:\n"
            "    importlib.import_module(name)\n"
            "print(json.dumps(sorted(getattr(m, '__file__', None) or '' for m in list(sys.modules.values()))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = [Path(path) for path in json.loads(proc.stdout.splitlines()[-1])
            if path.startswith((str(REPO / "harness") + os.sep, str(REPO / "hydra_plugins") + os.sep))]
    assert len(ours) > 50 and REPO / "harness" / "launch" / "cli.py" in ours
    assert [line for path in ours for line in _reads_at_import(path)] == []
    assert _reads_at_import(REPO / "harness" / "tracking" / "mlflow_store.py")  # what the check finds
