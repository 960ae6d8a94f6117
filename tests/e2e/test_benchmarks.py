"""The benchmark script runs and prints its table (a smoke round; nothing here is timed)."""
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
def test_speed_benchmark_smoke_prints_its_table():
    lines = smoke("bench_speed").strip().splitlines()
    assert lines[2].startswith("| batch | training s: baseline / harness / floor | harness ÷ baseline")
    row = re.fullmatch(r"\| 32 \| ([\d.]+) / ([\d.]+) / ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) / ([\d.]+) \| "
                       r"([\d.]+) \|", lines[4])
    assert row, lines[4]
    baseline, harness, floor, ratio = (float(row.group(i)) for i in (1, 2, 3, 4))
    assert min(baseline, harness, floor) > 0 and abs(ratio - harness / baseline) < 0.02


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
    assert re.search(r"\| two equal runs, throughput with n_jobs=2 ÷ n_jobs=1 \| [\d.]+x \|", text)
    memory = re.search(r"\| peak memory of one run \(largest seen\) \| (\d+) MB \|", text)
    assert memory and int(memory.group(1)) > 100  # a TensorFlow process: hundreds of MB, not a missing value


@pytest.mark.slow
def test_probes_benchmark_smoke_prints_its_table():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_probes", "--smoke"],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    off = re.search(r"\| main job with `probes=false`, wall time \| ([\d.]+) s \|", proc.stdout)
    on = re.search(r"\| main job with the default probes, wall time \| ([\d.]+) s \|", proc.stdout)
    ratio = re.search(r"\| ratio, probes on ÷ off \| ([\d.]+)x \|", proc.stdout)
    assert off and on and ratio, proc.stdout
    assert abs(float(ratio.group(1)) - float(on.group(1)) / float(off.group(1))) < 0.02
    assert re.search(r"\| the sweep's interpolation \(`python -m harness.probe`\), alone \| [\d.]+ s \|", proc.stdout)


@pytest.mark.slow
def test_precise_bn_benchmark_smoke_prints_its_table():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_precise_bn", "--smoke"],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = re.search(r"\| batch 32 \| ([\d.]+)% \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+)x \|", proc.stdout)
    assert row, proc.stdout
    share, without, with_bn, ratio = (float(row.group(i)) for i in (1, 2, 3, 4))
    assert 0 < share < 100 and min(without, with_bn) > 0 and abs(ratio - with_bn / without) < 0.01
    assert re.search(r"\| the main job's 1 runs together \| [\d.]+% \| [\d.]+ s \| [\d.]+ s \| [\d.]+x \|",
                     proc.stdout)


@pytest.mark.slow
def test_data_checks_benchmark_smoke_prints_its_table():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_data_checks", "--smoke"],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = re.findall(r"\| (MNIST-1D \(600 samples\)|a folder of 200 images) \| ([\d.]+) s \| ([\d.]+) ms "
                      r"\((\d+) calls\) \| ([\d.]+)% \|", proc.stdout)
    assert [row[0] for row in rows] == ["MNIST-1D (600 samples)", "a folder of 200 images"], proc.stdout
    for _, wall, spent, calls, share in rows:
        assert float(wall) > 0 and int(calls) >= 2  # the command's check and the run's
        assert abs(float(share) - 100 * float(spent) / 1000 / float(wall)) < 0.05


@pytest.mark.slow
def test_backends_benchmark_smoke_prints_its_table():
    text = smoke("bench_backends")
    step = re.search(r"\| harness, ms per training step at batch 32 \| ([\d.]+) ms \| ([\d.]+) ms \| ([\d.]+)x \|",
                     text)
    assert step, text
    tf_ms, jax_ms, ratio = (float(step.group(i)) for i in (1, 2, 3))
    assert min(tf_ms, jax_ms) > 0 and abs(ratio - jax_ms / tf_ms) < 0.01
    assert re.search(r"\| plain Keras `fit`, ms per step at batch 32 \| [\d.]+ ms \| [\d.]+ ms \| [\d.]+x \|", text)
    assert re.search(r"\| one 2-epoch run at batch 32, whole process \| [\d.]+ s \| [\d.]+ s \| [\d.]+x \|", text)


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


@pytest.mark.slow
def test_diagnose_matrix_smoke_prints_its_table():
    """One tiny +study=diagnose case: its row gives the drop, the parts (which add up to it), the checks flagged,
    whether that is what the case expects, the checks' share of the wall time and the wall time."""
    lines = smoke("diagnose_matrix").strip().splitlines()
    assert lines[0].startswith("| case: `+study=diagnose` with | drop | parts")
    row = next(line for line in lines if line.startswith("| smoke:"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    drop = float(cells[1])
    parts = [float(p.split()[1]) for p in cells[2].split("<br>")]
    assert abs(sum(parts) - drop) < 2e-3  # each printed to 3 decimals
    assert cells[3] == "none" and cells[4].startswith("yes")
    assert 0 < float(cells[5].rstrip("%")) < 100 and float(cells[6].rstrip(" s")) > 0  # a share and a time


@pytest.mark.slow
def test_plan_benchmark_smoke_prints_its_table():
    """20 jobs: how long until the first run started, the plan's cost a job, and the command's peak memory."""
    lines = smoke("bench_plan").strip().splitlines()
    assert lines[0].startswith("| jobs | before (–): first run | plan per job | command's peak memory | after")
    row = re.fullmatch(r"\| 20 \| not measured \| – \| – \| ([\d.]+) s \| ([\d.]+) ms \| (\d+) MB \|", lines[-1])
    assert row, lines[-1]
    assert 0 < float(row.group(1)) < 120 and float(row.group(2)) > 0 and int(row.group(3)) > 50


@pytest.mark.slow
def test_report_benchmark_smoke_prints_its_table():
    """20 constructed runs and an index of 3 sweeps: the report's (first and again) and the results table's times
    (with the metrics cache and without) and the HTML's size."""
    text = smoke("bench_report")
    row = re.search(r"\| 20 runs, 2 facets \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+) MB \| ([\d.]+) s \| ([\d.]+) s \|",
                    text)
    index = re.search(r"\| `reports/index.html` over 3 sweeps \(12 runs each\) \| ([\d.]+) s( \| –){4} \|", text)
    assert row and index, text
    assert all(float(value) > 0 for value in (*row.groups(), index.group(1)))


@pytest.mark.slow
def test_tracking_benchmark_smoke_prints_its_table():
    """A 2-run job with and without tracking=mlflow: both times, their ratio as the cost, the new store's time;
    the script itself checks each tracked run in MLflow (one value per epoch) and fails otherwise."""
    text = smoke("bench_tracking")
    row = re.search(r"\| `python -m harness batch_size=32,64 [^`]*-m`, median of 1 \| ([\d.]+) s \| ([\d.]+) s \| "
                    r"([+-][\d.]+)% \|", text)
    assert row, text
    off, on, cost = (float(value) for value in row.groups())
    assert off > 0 and on > 0 and abs(cost - (on / off - 1) * 100) < 1.5  # of times printed to 0.1 s
    made = re.search(r"opening MLflow took ([\d.]+) s with a new store, ([\d.]+) s with an existing one", text)
    assert made and float(made.group(1)) > 0 and float(made.group(2)) > 0, text
