"""How far to trust each run's end-of-run probes: its top eigenvalue against SciPy's Lanczos (`eigsh`) over the
same Hessian-vector products on the same weights and samples, and its trace's stated standard error.

    python -m benchmarks.probe_accuracy sweeps/<sweep-id>             # a table, one row per run with probes
    python -m benchmarks.probe_accuracy sweeps/<sweep-id> --update-docs

The run's model is rebuilt from its recorded config and final.weights.npz, and probed on the same fixed probe
subset; `eigsh` (ARPACK's implicitly restarted Lanczos, tolerance 1e-6) gives the eigenvalue of largest
magnitude as the reference. Nothing here is timed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from harness.store import layout


def reference_eigenvalue(run_dir: Path) -> float:
    """The largest-magnitude eigenvalue of the run's probe Hessian by SciPy's eigsh, on its final weights."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    from harness.config.compose import recorded_run_config
    from harness.data import batches
    from harness.data.decode import decoder
    from harness.models import registry as models
    from harness.probes.in_run import PROBE_BATCH, load_weights, probe_indices
    from harness.probes.objective import Objective
    from harness.run import inputs

    cfg = recorded_run_config(run_dir)
    data_in = inputs.prepare_data(cfg)
    model = models.build(cfg.model, data_in.input_shape, data_in.num_classes)
    model.set_weights(load_weights(run_dir / layout.FINAL_WEIGHTS)[0])
    chosen = probe_indices(len(data_in.y_train), cfg.train.probe_samples)
    decode = decoder(data_in.decode)
    objective = Objective(model, batches.fixed_batches(data_in.x_train[chosen], data_in.y_train[chosen],
                                                       PROBE_BATCH, decode))
    operator = LinearOperator((objective.size, objective.size), matvec=objective.hessian_vector, dtype=np.float64)
    [value] = eigsh(operator, k=1, which="LM", tol=1e-6, return_eigenvectors=False)
    return float(value)


def accuracy(sweep_dir: Path) -> list[dict]:
    """One row per run with a probes.json: its eigenvalue, the reference, their relative difference, its trace
    with the standard error relative to it, and whether each estimate converged."""
    rows = []
    for run_dir in sorted((p for p in Path(sweep_dir).iterdir() if (p / layout.PROBES_FILE).exists()),
                          key=lambda p: int(p.name) if p.name.isdigit() else p.name):
        probes = json.loads((run_dir / layout.PROBES_FILE).read_text())
        if probes.get("error"):
            continue
        record = json.loads((run_dir / layout.RUN_FILE).read_text())
        reference = reference_eigenvalue(run_dir)
        rows.append({
            "run": record["run_id"], "batch_size": record["config"]["batch_size"], "seed": record["config"]["seed"],
            "eigenvalue": probes["hessian_top_eigenvalue"], "eigsh": reference,
            "eigen_difference": abs(probes["hessian_top_eigenvalue"] - reference) / abs(reference),
            "eigen_converged": probes["eigen_converged"], "trace": probes["hessian_trace"],
            "trace_stderr": probes["trace_stderr"],
            "trace_relative_error": probes["trace_stderr"] / abs(probes["hessian_trace"]),
            "trace_converged": probes["trace_converged"], "products": probes["hessian_products"],
        })
    return rows


def table(sweep_dir: Path, rows: list[dict]) -> str:
    lines = [f"`python -m benchmarks.probe_accuracy {sweep_dir}` ({len(rows)} runs):", "",
             "| run | eigenvalue | eigsh | difference | trace ± standard error | relative error | converged "
             "(eigenvalue, trace) | products |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['eigenvalue']:.4g} | {r['eigsh']:.4g} | {r['eigen_difference']:.2e} | "
                     f"{r['trace']:.4g} ± {r['trace_stderr']:.2g} | {r['trace_relative_error']:.1%} | "
                     f"{'yes' if r['eigen_converged'] else 'no'}, {'yes' if r['trace_converged'] else 'no'} | "
                     f"{r['products']} |")
    worst = max(r["eigen_difference"] for r in rows)
    unconverged = sum(not r["trace_converged"] for r in rows)
    lines += ["", f"Largest relative eigenvalue difference from eigsh: {worst:.2e}; traces that stopped above a 5% "
              f"standard error (marked not converged): {unconverged} of {len(rows)}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--update-docs", dest="update_docs", action="store_true", help="rewrite its generated blocks in README.md and docs/")
    args = parser.parse_args(argv)
    rows = accuracy(args.sweep_dir)
    if not rows:
        print(f"probe_accuracy: {args.sweep_dir} has no run with probes", file=sys.stderr)
        return 2
    text = table(args.sweep_dir, rows)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("probe-accuracy", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
