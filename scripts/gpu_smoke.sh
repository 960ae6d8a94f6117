#!/usr/bin/env bash
# GPU smoke test, for a machine with NVIDIA GPUs.
#   scripts/gpu_smoke.sh              # TensorFlow: a short MNIST-1D sweep over gpus=1,2,(4,8) (as many as exist),
#                                     # samples/s per replica count, every run's replicas checked to be GPUs
#                                     # (.venv/bin/python; pip install "tensorflow[and-cuda]")
#   scripts/gpu_smoke.sh jax WHEELS   # JAX with CUDA and no TensorFlow (PY=python3 by default): installs from the
#                                     # wheels in WHEELS only what that Python lacks, the project with --no-deps,
#                                     # then runs the main job with backend=jax gpus=1 seed=0, prints samples/s per
#                                     # batch size and the wall time, and checks every run trained on a GPU; the
#                                     # report (matplotlib, Jinja2) is built from the copied sweep folder on any
#                                     # machine: python -m harness.report SWEEP
#   scripts/gpu_smoke.sh share WHEELS [OPTIONS]  # the same set-up; the main job (seed=0, backend=jax gpus=1)
#                                     # at hydra.launcher.runs_per_gpu 1 and 4 on one GPU, 2 rounds: wall time,
#                                     # samples/s, GPU use (python -m benchmarks.bench_gpu_share OPTIONS; its table
#                                     # goes in docs/sweeps.md, "Many small runs on one GPU", with --from --update-docs)
#   scripts/gpu_smoke.sh wheels WHEELS [PYTHON_VERSION]   # on a machine with an index: those wheels, for the
#                                     # GPU machine's Python (default 3.12)
set -euo pipefail
cd "$(dirname "$0")/.."
SWEEP=${SWEEP:-sweeps/gpu-smoke-$(date +%Y%m%d-%H%M%S)}
# what a JAX run needs beyond JAX itself: import name=distribution (the project's own dependencies name TensorFlow)
JAX_NEEDS="keras=keras optree=optree namex=namex hydra=hydra-core omegaconf=omegaconf antlr4=antlr4-python3-runtime
mnist1d=mnist1d submitit=submitit hydra_plugins.hydra_submitit_launcher=hydra-submitit-launcher pandas=pandas
pyarrow=pyarrow scipy=scipy sklearn=scikit-learn tensorboard=tensorboard"

if [ "${1:-}" = wheels ]; then
  dir=${2:?usage: scripts/gpu_smoke.sh wheels DIR [PYTHON_VERSION]}; version=${3:-3.12}
  dists=$(for need in $JAX_NEEDS; do echo "${need#*=}"; done | grep -v '^antlr4')
  # Hydra's antlr4 4.9.3 is a source distribution only: built here into a pure-Python wheel first, which the
  # download of Hydra and omegaconf (both require it) then finds in DIR
  "${PY:-.venv/bin/python}" -m pip wheel --quiet --no-deps -w "$dir" "antlr4-python3-runtime==4.9.3"
  # shellcheck disable=SC2086
  "${PY:-.venv/bin/python}" -m pip download --quiet --only-binary=:all: --python-version "$version" \
    --find-links "$dir" -d "$dir" $dists
  echo "gpu_smoke: wheels for Python $version in $dir"; exit 0
fi

if [ "${1:-}" = jax ] || [ "${1:-}" = share ]; then
  PY=${PY:-python3}; wheels=${2:-}
  "$PY" -c 'import jax, sys; sys.exit(0 if jax.devices("gpu") else 1)' 2>/dev/null \
    || { echo "gpu_smoke: $PY has no JAX that sees a GPU (pip install 'jax[cuda12]')" >&2; exit 2; }
  missing=$("$PY" - $JAX_NEEDS <<'PY'
import importlib.util, sys
print(" ".join(need.split("=")[1] for need in sys.argv[1:] if importlib.util.find_spec(need.split("=")[0]) is None))
PY
)
  if [ -n "$missing" ]; then
    [ -n "$wheels" ] || { echo "gpu_smoke: $PY lacks $missing; give a wheels folder (scripts/gpu_smoke.sh wheels DIR)" >&2; exit 2; }
    # shellcheck disable=SC2086
    "$PY" -m pip install --quiet --no-index --find-links "$wheels" $missing
  fi
  "$PY" -m pip install --quiet --no-deps --no-build-isolation . >/dev/null
  if [ "$1" = share ]; then
    export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}  # one GPU, whatever the machine has
    shift 2 || shift $#
    "$PY" -m benchmarks.bench_gpu_share --out "$SWEEP" --command "scripts/gpu_smoke.sh share WHEELS${*:+ $*}" "$@"
    exit $?
  fi
  started=$(date +%s)
  "$PY" -m harness batch_size=8,32,64,128 backend=jax gpus=1 seed=0 hydra.sweep.dir="$SWEEP" -m || true
  wall=$(( $(date +%s) - started ))
  "$PY" - "$SWEEP" "$wall" <<'PY'
import json, sys
from pathlib import Path
import pandas as pd

sweep, wall, ok = Path(sys.argv[1]), int(sys.argv[2]), True
print(f"{'batch':>5} {'status':>9} {'samples/s':>10}  devices")
for run_file in sorted(sweep.glob("*/run.json"), key=lambda p: int(p.parent.name)):
    record = json.loads(run_file.read_text())
    env = record["environment"]
    metrics = pd.read_parquet(run_file.parent / "metrics.parquet")
    speed = metrics["samples_per_second"].iloc[1:].median() if len(metrics) > 1 else metrics["samples_per_second"].iloc[0]
    on_gpu = record["status"] == "completed" and all(d.startswith("gpu") for d in env.get("devices", []))
    ok &= on_gpu and "tensorflow" not in env
    print(f"{record['config']['batch_size']:>5} {record['status']:>9} {speed:>10.0f}  {','.join(env.get('devices', []))}"
          f"{'' if on_gpu else '  <-- NOT ON A GPU'}")
print(f"gpu_smoke: wall time {wall} s; the report: python -m harness.report {sweep} (on any machine)")
print("gpu_smoke: OK, every run trained on a GPU without TensorFlow" if ok else "gpu_smoke: FAILED")
sys.exit(0 if ok else 1)
PY
  exit $?
fi

PY=${PY:-.venv/bin/python}

n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "$n" -lt 1 ]; then echo "gpu_smoke: no GPU visible (nvidia-smi -L lists none)" >&2; exit 2; fi
counts=1
for k in 2 4 8; do [ "$n" -ge "$k" ] && counts="$counts,$k"; done
echo "gpu_smoke: $n GPU(s); sweeping gpus=$counts"

"$PY" -m harness gpus="$counts" per_replica_batch=true batch_size=256 epochs=4 dataset.num_samples=20000 seed=0 \
  hydra.sweep.dir="$SWEEP" -m

"$PY" - "$SWEEP" <<'PY'
import json, sys
from pathlib import Path
import pandas as pd

sweep, ok = Path(sys.argv[1]), True
print(f"{'gpus':>4} {'replicas':>8} {'strategy':>22} {'global batch':>12} {'samples/s':>10}  devices")
for run_file in sorted(sweep.glob("*/run.json")):
    record = json.loads(run_file.read_text())
    env = record["environment"]
    metrics = pd.read_parquet(run_file.parent / "metrics.parquet")
    speed = metrics["samples_per_second"].iloc[1:].median() if len(metrics) > 1 else metrics["samples_per_second"].iloc[0]
    on_gpus = record["status"] == "completed" and all(d.startswith("/gpu") for d in env.get("devices", []))
    ok &= on_gpus and env.get("replicas") == record["config"]["gpus"]
    print(f"{record['config']['gpus']:>4} {env.get('replicas', '?'):>8} {env.get('strategy', '?'):>22} "
          f"{int(metrics['global_batch_size'].iloc[0]):>12} {speed:>10.0f}  {','.join(env.get('devices', []))}"
          f"{'' if on_gpus else '  <-- NOT ON GPUS / ' + record['status']}")
print("gpu_smoke: OK, every replica ran on a GPU" if ok else "gpu_smoke: FAILED")
sys.exit(0 if ok else 1)
PY
