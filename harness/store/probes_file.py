"""probes.json, the end-of-run probes of one run: its fields named once, for the writer (harness.probes.in_run)
and its readers (harness.assess.why, harness.report.results)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.store.files import read_json, write_fields
from harness.store.layout import PROBES_FILE

FIELDS = {
    "probe_samples": "training samples the probes measured on (the fixed probe subset)",
    "probe_loss": "the training loss on that subset",
    "hessian_top_eigenvalue": "the Hessian's eigenvalue of largest magnitude (Lanczos, Rayleigh-Ritz)",
    "eigen_error": "its error bound (an eigenvalue lies this close)", "eigen_iterations": "Lanczos steps run",
    "eigen_converged": "whether the error bound reached 1e-3 of the eigenvalue",
    "hessian_trace": "the Hessian's trace (the Lanczos sketch's, exact, plus Hutchinson on the rest)",
    "trace_stderr": "its standard error", "trace_vectors": "Hutchinson vectors on the rest",
    "trace_sketch": "the sketch's rank (Lanczos steps)",
    "trace_converged": "whether the standard error reached 5% of the trace",
    "hessian_products": "Hessian-vector products in all",
    "sharpness": "Keskar et al.'s sharpness at epsilon 1e-3", "sharpness_5e-4": "the same at epsilon 5e-4",
    "sharpness_iterations": "L-BFGS-B iterations at epsilon 1e-3", "sharpness_5e-4_iterations": "at 5e-4",
    "sharpness_converged": "whether both searches stopped on convergence, not their 10-iteration cap",
    "seconds": "the probes' time",
    "error": "null, or why the probes failed (the run stays completed)",
}
MEASURES = ("hessian_top_eigenvalue", "hessian_trace", "sharpness", "sharpness_5e-4")  # compared across batch sizes
CONVERGED = ("eigen_converged", "trace_converged", "sharpness_converged")


def write(run_dir: Path, values: dict[str, Any]) -> None:
    write_fields(Path(run_dir) / PROBES_FILE, values, FIELDS)


def read(run_dir: Path) -> dict[str, Any] | None:
    """The run's probes.json, or None without one; raises DamagedFile when it cannot be read."""
    return read_json(Path(run_dir) / PROBES_FILE)
