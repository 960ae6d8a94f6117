"""Tests parametrised over Keras's backends. Keras's backend is fixed per process, so the suite's processes run
TensorFlow and the `jax` cases run in a child pytest (HARNESS_TEST_BACKEND=jax): the same test bodies, on the
other backend, each passing or failing with its own outcome (tests/conftest.py's pytest_pyfunc_call). One child
runs every selected case for that backend (its start-up and JAX's import are paid once), once per test run: those
cases share one pytest-xdist group, and should another worker need the outcomes all the same, the first to ask
runs the child under a file lock and leaves them for the other."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

BACKENDS = ("tensorflow", "jax")
VARIABLE = "HARNESS_TEST_BACKEND"
SHARED = "HARNESS_TEST_SHARED"  # the parent's folder of shared sweeps and caches, given to the child pytest only
shared: Path | None = None  # that folder, once tests/conftest.py's session fixture has made it
REPO = Path(__file__).resolve().parent.parent.parent
_outcomes: dict[str, dict[str, str | None]] = {}  # backend -> {node id: failure or None}


def current() -> str:
    """The backend this test process runs Keras on."""
    return os.environ.get(VARIABLE, "tensorflow")


def here(backend: str) -> bool:
    return backend == current()


def node(item) -> str:
    """The item's node id as pytest selects it (pytest-xdist's loadgroup appends "@<group>")."""
    return item.nodeid.split("@", 1)[0]


def case_backend(item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("backend") if callspec is not None else None


def run_in_child(item, backend: str, timeout: int = 900) -> None:
    """The outcome of `item`'s case on `backend`, from a child pytest that ran every selected case on that backend;
    fails with the case's own report when it did not pass."""
    if backend not in _outcomes:
        cases = [node(i) for i in item.session.items if case_backend(i) == backend]
        _outcomes[backend] = _shared(backend, lambda: _run(cases, backend, timeout))
    outcome = _outcomes[backend].get(node(item), f"{node(item)}: the child pytest did not report it")
    if outcome is not None:
        raise AssertionError(f"on {backend}, in a process of its own:\n{outcome}")


def _shared(backend: str, run) -> dict[str, str | None]:
    """`run()`'s outcomes, computed once per test run by whichever xdist worker asks first."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:  # one process: nothing to share
        return run()
    # beside the workers' temporary folders, which pytest removes with them (the system's /tmp kept one a run)
    folder = (shared or Path(tempfile.gettempdir())) / f"harness-backend-cases-{run_id}"
    folder.mkdir(exist_ok=True)
    with open(folder / f"{backend}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / f"{backend}.json"
        if not done.exists():
            done.write_text(json.dumps(run()))
        return json.loads(done.read_text())


def _run(nodeids: list[str], backend: str, timeout: int) -> dict[str, str | None]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
             f"--junitxml={report}", *nodeids],
            cwd=REPO, capture_output=True, text=True, timeout=timeout,
            env={**os.environ, VARIABLE: backend, **({SHARED: str(shared)} if shared else {})},
        )
        if not report.exists():
            missing = f"the child pytest wrote no report:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
            return {n: missing for n in nodeids}
        outcomes = {}
        for case in ElementTree.parse(report).iter("testcase"):
            module = case.get("classname", "").replace(".", "/")
            nodeid = f"{module}.py::{case.get('name')}"
            failed = [child for child in case if child.tag in ("failure", "error", "skipped")]
            outcomes[nodeid] = None if not failed else "\n".join(
                f"{child.tag}: {child.get('message', '')}\n{child.text or ''}" for child in failed)[-6000:]
        return outcomes
