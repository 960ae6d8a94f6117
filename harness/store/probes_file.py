"""probes.json, the end-of-run probes of one run: its fields named once, for the writer (harness.probes.in_run)
and its readers (harness.assess.why, harness.report.results)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.store.files import read_json, write_json
from harness.store.layout import PROBES_FILE

FIELDS = {
    "probe_samples": "training samples the probes measured on (the fixed probe subset)",
    "probe_loss": "the training loss on that subset",
    "hessian_top_eigenvalue": "the Hessian's largest eigenvalue (power iteration)",
    "eigen_iterations": "power iterations run", "eigen_converged": "whether the eigenvalue converged",
    "hessian_trace": "the Hessian's trace (Hutchinson)", "trace_stderr": "its standard error",
    "trace_vectors": "probe vectors used", "trace_converged": "whether the trace converged",
    "sharpness": "Keskar et al.'s sharpness at epsilon 1e-3", "sharpness_5e-4": "the same at epsilon 5e-4",
    "seconds": "the probes' time",
    "error": "null, or why the probes failed (the run stays completed)",
}
MEASURES = ("hessian_top_eigenvalue", "hessian_trace", "sharpness", "sharpness_5e-4")  # compared across batch sizes
CONVERGED = ("eigen_converged", "trace_converged")


def write(run_dir: Path, values: dict[str, Any]) -> None:
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"probes.json has no field {unknown[0]!r}; its fields are {', '.join(FIELDS)}")
    write_json(Path(run_dir) / PROBES_FILE, values)


def read(run_dir: Path) -> dict[str, Any] | None:
    """The run's probes.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(run_dir) / PROBES_FILE)
