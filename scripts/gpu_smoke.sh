#!/usr/bin/env bash
# GPU smoke test, for a machine with NVIDIA GPUs: a short MNIST-1D sweep over gpus=1,2,(4,8) (as many as
# exist), then prints samples/s per replica count and checks that every run's replicas were GPUs.
#   scripts/gpu_smoke.sh            # uses .venv/bin/python (TensorFlow needs its CUDA libraries:
#                                   #   pip install "tensorflow[and-cuda]")
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
SWEEP=${SWEEP:-sweeps/gpu-smoke-$(date +%Y%m%d-%H%M%S)}

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
