"""What this machine offers a sweep: its GPUs, its cores and memory, and how many runs fit at once."""
from __future__ import annotations

import os
import shutil
import subprocess

import psutil

MEMORY_PER_RUN = 1.5 * 2**30  # bytes a CPU run may need; caps the default parallelism


class GpuPool:
    """GPU ids handed out to running jobs, each GPU to at most `runs_per_gpu` of them at once (its slots): a job
    asking for N GPUs gets N distinct ids with a free slot each, the least loaded first; a GPU is free again when
    the last job holding it ends."""

    def __init__(self, ids: list[int], runs_per_gpu: int = 1):
        self.all = list(ids)
        self.runs_per_gpu = max(1, int(runs_per_gpu))
        self.held = {i: 0 for i in self.all}  # id -> running jobs holding it

    @property
    def free(self) -> list[int]:
        """The ids no running job holds."""
        return [i for i in self.all if self.held[i] == 0]

    def acquire(self, job) -> list[int] | None:
        """The ids for `job` (a slot of each taken), [] for a job that needs none, None while it must wait."""
        if not self.all or job.gpus == 0:
            return []
        open_ = [i for i in self.all if self.held[i] < self.runs_per_gpu]
        if job.devices is not None:
            wanted = list(job.devices)
            if any(i not in self.all for i in wanted):
                return []  # not on this machine: the run itself reports it
            if not all(i in open_ for i in wanted):
                return None
        else:
            if job.gpus > len(self.all):
                return []  # can never fit: the run itself reports it
            if job.gpus > len(open_):
                return None
            wanted = sorted(open_, key=lambda i: (self.held[i], self.all.index(i)))[: job.gpus]
        for i in wanted:
            self.held[i] += 1
        return wanted

    def release(self, ids: list[int]) -> None:
        for i in ids:
            if self.held.get(i, 0) > 0:
                self.held[i] -= 1


def visible_gpus() -> list[int]:
    """GPU ids on this machine: CUDA_VISIBLE_DEVICES when set, else what nvidia-smi lists, else none."""
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        value = os.environ["CUDA_VISIBLE_DEVICES"].strip()
        return [int(i) for i in value.split(",") if i.strip().isdigit()]
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout
            return [int(line) for line in out.split() if line.strip().isdigit()]
        except (OSError, subprocess.SubprocessError):
            return []
    return []


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes a new process can have without swapping: the kernel's estimate (Linux's MemAvailable: free memory plus
    the page cache and other memory it can reclaim), not free pages alone, which leave the page cache out: after a
    few GB of reads, free memory can be 2 GB of a machine with 23 available. None when unknown."""
    try:
        return int(psutil.virtual_memory().available)
    except (OSError, RuntimeError, psutil.Error):
        return None


def default_parallelism(n_jobs_total: int, gpu_ids: list[int], gpu_jobs: bool = False, runs_per_gpu: int = 1) -> int:
    """Runs at once: for a sweep of GPU jobs on a machine with GPUs, `runs_per_gpu` per GPU; otherwise (CPU jobs,
    whatever GPUs are visible) one per core, capped by the memory available."""
    if gpu_jobs and gpu_ids:
        return max(1, min(n_jobs_total, len(gpu_ids) * max(1, runs_per_gpu)))
    available = available_memory()
    by_memory = cpu_count() if available is None else max(1, int(available // MEMORY_PER_RUN))
    return max(1, min(n_jobs_total, cpu_count(), by_memory))


def alone_parallelism(jobs: list, gpu_ids: list[int]) -> int:
    """Runs at once for jobs that each run alone on their devices (a time measured on the machine): one on a CPU,
    whose cores every run shares; on GPUs, as many as the GPUs hold jobs of the largest device count, one a device."""
    per_job = max((job.gpus for job in jobs), default=0)
    return max(1, len(gpu_ids) // per_job) if per_job > 0 and gpu_ids else 1


def shared_gpu_env(runs_per_gpu: int) -> dict[str, str]:
    """What a run on a GPU shared by `runs_per_gpu` runs starts with, set before its backend starts: TensorFlow
    maps nearly all of a GPU's memory at start unless it grows it as needed (TF_FORCE_GPU_ALLOW_GROWTH); JAX
    preallocates 75% unless told a share (XLA_PYTHON_CLIENT_MEM_FRACTION: 0.9 of the GPU split evenly). Nothing
    for a GPU of its own: the backends' defaults are the fastest there."""
    if runs_per_gpu <= 1:
        return {}
    return {"TF_FORCE_GPU_ALLOW_GROWTH": "true", "XLA_PYTHON_CLIENT_MEM_FRACTION": f"{0.9 / runs_per_gpu:.3f}",
            "HARNESS_RUNS_PER_GPU": str(runs_per_gpu)}
