"""One benchmark script run for real on its smoke setting (bench_sweep: the main job's variants, whose sweep helper
the other scripts share), and what the backends benchmark reads of the two shared smoke sweeps. Every script's table
is tested on canned numbers in tests/benchmarks/test_tables.py; nothing here is timed."""
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


def smoke(module: str) -> str:
    """`python -m benchmarks.MODULE --smoke`'s table, once it has exited 0."""
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", "--smoke"],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_sweep_benchmark_smoke_prints_its_table():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_sweep", "--smoke"],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    # the smoke round sweeps batch 16 only: 3 runs with the default 3 seeds, 1 with seed=0
    three = re.search(r"\| main job `python -m harness batch_size=8,32,64,128 -m` \(3 seeds, 3 runs\), wall time "
                      r"\| ([\d.]+) s \|", text)
    one = re.search(r"\| the same with `seed=0` \(1 seed, 1 runs\), wall time \| ([\d.]+) s \|", text)
    ratio = re.search(r"\| 3 seeds ÷ 1 seed \| ([\d.]+)x \|", text)
    assert three and one and ratio, text
    assert abs(float(ratio.group(1)) - float(three.group(1)) / float(one.group(1))) < 0.02
    assert re.search(r"\| 3 seeds with a fresh process per run .* \| not run in a smoke round \|", text)
    phases = dict(re.findall(r"^\| ([^|]+?) \| (-?[\d.]+) \|$", text.split("Where the 3-seed")[1], flags=re.M))
    assert {"planning and validation", "runs", "report", "training epochs", "end-of-run probes"} <= set(phases)
    assert float(phases["training epochs"]) > 0 and float(phases["runs"]) > 0
    assert float(phases["end-of-run probes"]) == 0  # the smoke round runs without probes
    assert "| two equal runs, throughput with n_jobs=2 ÷ n_jobs=1 | not run in a smoke round |" in text
    memory = re.search(r"\| peak memory of one run \(largest seen\) \| (\d+) MB \|", text)
    assert memory and int(memory.group(1)) > 100  # a TensorFlow process: hundreds of MB, not a missing value


@pytest.mark.slow
def test_the_backends_benchmark_s_agreement_and_phases_read_the_two_smoke_sweeps(smoke_sweep, jax_smoke_sweep):
    """What the benchmark reads of its sweeps, on the two shared smoke sweeps (one seed each: intervals of 0)."""
    from benchmarks import bench_backends
    from benchmarks.bench_sweep import phases

    sweeps = {"tensorflow": smoke_sweep[0] / "sweeps" / "smoke", "jax": jax_smoke_sweep[0] / "sweeps" / "smoke-jax"}
    rows = bench_backends.agreement(sweeps)
    assert [row.split(" | ")[0] for row in rows] == ["| 16", "| 64", "| verdict"], rows
    for row in rows[:2]:
        assert re.fullmatch(r"\| \d+ \| [\d.]+ ± 0\.000 \| [\d.]+ ± 0\.000 \| (yes|no) \|", row), row
    assert re.fullmatch(r"\| verdict \| [\w ]+ \| [\w ]+ \| (same|differs) \|", rows[2]), rows[2]
    run_json = max(p.stat().st_mtime for p in sweeps["jax"].glob("*/run.json"))
    found = phases(sweeps["jax"], run_json - 60, run_json + 30, 2)
    assert found["training epochs"] > 0 and found["end-of-run probes"] > 0
