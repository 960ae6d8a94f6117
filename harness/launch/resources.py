"""What this machine offers a sweep: its GPUs, its cores and memory, and how many runs fit at once."""
from __future__ import annotations

import os
import shutil
import subprocess

import psutil

MEMORY_PER_RUN = 1.5 * 2**30  # bytes a CPU run may need; caps the default parallelism


class GpuPool:
    """GPU ids handed out to running jobs; a job gets ids no other running job holds."""

    def __init__(self, ids: list[int]):
        self.free = list(ids)
        self.all = list(ids)

    def acquire(self, job) -> list[int] | None:
        """The ids for `job` (removed from the pool), [] for a job that needs none, None while it must wait."""
        if not self.all or job.gpus == 0:
            return []
        if job.devices is not None:
            wanted = list(job.devices)
            if any(i not in self.all for i in wanted):
                return []  # not on this machine: the run itself reports it
            if not all(i in self.free for i in wanted):
                return None
        else:
            if job.gpus > len(self.all):
                return []  # can never fit: the run itself reports it
            if job.gpus > len(self.free):
                return None
            wanted = self.free[: job.gpus]
        self.free = [i for i in self.free if i not in wanted]
        return wanted

    def release(self, ids: list[int]) -> None:
        self.free.extend(i for i in ids if i not in self.free)


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


def default_parallelism(n_jobs_total: int, gpu_ids: list[int]) -> int:
    """With GPUs, one job per GPU; on CPU, one per core, capped by the memory available."""
    if gpu_ids:
        return max(1, min(n_jobs_total, len(gpu_ids)))
    available = available_memory()
    by_memory = cpu_count() if available is None else max(1, int(available // MEMORY_PER_RUN))
    return max(1, min(n_jobs_total, cpu_count(), by_memory))
