"""What this machine offers a sweep (harness.launch.resources): GPU ids, the GPU pool, cores and default parallelism."""
import os

import pytest

from harness.launch import resources
from harness.launch.resources import GpuPool
from harness.launch.scheduler import Job


def test_gpu_pool_hands_out_ids_no_running_job_holds():
    pool = GpuPool([0, 1, 2, 3])
    one = Job(0, [], None, [], gpus=1)
    two = Job(1, [], None, [], gpus=2)
    assert pool.acquire(one) == [0] and pool.acquire(two) == [1, 2]
    assert pool.acquire(two) is None  # only 3 is free: wait
    pinned = Job(2, [], None, [], gpus=2, devices=(0, 3))
    assert pool.acquire(pinned) is None  # 0 is busy
    pool.release([0])
    assert pool.acquire(pinned) == [0, 3]
    assert pool.acquire(Job(3, [], None, [], gpus=0)) == []  # a CPU job needs no slot
    assert GpuPool([]).acquire(one) == []  # no GPUs: the run itself decides (simulate or fail)


def test_jobs_that_can_never_fit_are_let_through_for_the_run_to_report():
    pool = GpuPool([0, 1])
    assert pool.acquire(Job(0, [], None, [], gpus=4)) == []  # more than the machine has
    assert pool.acquire(Job(1, [], None, [], gpus=1, devices=(7,))) == []  # an id it does not have
    assert pool.free == [0, 1]  # and they hold nothing
    pool.release([1])  # releasing a free id does not duplicate it
    assert pool.free == [0, 1]


@pytest.mark.parametrize("value,ids", [("0,2", [0, 2]), ("3", [3]), ("", []), (" 1, 2 ", [1, 2]),
                                       ("GPU-5a1b", [])])
def test_visible_gpus_follow_cuda_visible_devices(monkeypatch, value, ids):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert resources.visible_gpus() == ids


def test_without_cuda_visible_devices_or_nvidia_smi_there_are_no_gpus(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(resources.shutil, "which", lambda name: None)
    assert resources.visible_gpus() == []


def test_gpu_slots_hand_each_gpu_to_up_to_runs_per_gpu_jobs_and_free_it_with_the_last():
    pool = GpuPool([0, 1], runs_per_gpu=2)
    one = [Job(n, [], None, [], gpus=1) for n in range(5)]
    assert [pool.acquire(job) for job in one[:4]] == [[0], [1], [0], [1]]  # the least loaded first
    assert pool.acquire(one[4]) is None and pool.free == []  # every slot taken: wait
    two = Job(9, [], None, [], gpus=2)
    pool.release([0])
    assert pool.acquire(two) is None  # GPU 1 has no free slot: a 2-GPU job needs one on each of two GPUs
    pool.release([1])
    assert pool.acquire(two) == [0, 1] and pool.free == []
    for ids in ([0], [1], [0, 1]):
        pool.release(ids)
    assert pool.free == [0, 1]  # freed when the last job holding it ended
    assert pool.acquire(Job(10, [], None, [], gpus=1, devices=(1,))) == [1] and pool.free == [0]


def test_cpu_jobs_are_not_capped_by_the_gpus_they_do_not_use(monkeypatch):
    """A one-GPU workstation runs the main job's 12 CPU runs one per core, not one at a time; GPU runs go
    runs_per_gpu per GPU."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(resources, "cpu_count", lambda: 16)
    monkeypatch.setattr(resources, "available_memory", lambda: int(100 * resources.MEMORY_PER_RUN))
    gpus = resources.visible_gpus()
    assert resources.default_parallelism(12, gpus) == 12
    assert resources.default_parallelism(12, gpus, gpu_jobs=True) == 1
    assert resources.default_parallelism(12, gpus, gpu_jobs=True, runs_per_gpu=4) == 4
    assert resources.default_parallelism(12, [0, 1, 2], gpu_jobs=True, runs_per_gpu=3) == 9


def test_default_parallelism_is_one_run_per_gpu_or_per_core_within_memory(monkeypatch):
    assert resources.default_parallelism(8, [0, 1, 2], gpu_jobs=True) == 3
    assert resources.default_parallelism(2, [0, 1, 2], gpu_jobs=True) == 2
    monkeypatch.setattr(resources, "cpu_count", lambda: 16)
    available = {"bytes": int(100 * resources.MEMORY_PER_RUN)}
    monkeypatch.setattr(resources, "available_memory", lambda: available["bytes"])
    assert resources.default_parallelism(40, []) == 16  # cores
    assert resources.default_parallelism(3, []) == 3  # jobs
    available["bytes"] = int(2.5 * resources.MEMORY_PER_RUN)
    assert resources.default_parallelism(40, []) == 2  # memory for two runs
    available["bytes"] = 10
    assert resources.default_parallelism(40, []) == 1  # always at least one
    available["bytes"] = None
    assert resources.default_parallelism(40, []) == 16  # unknown: the cores decide


def test_available_memory_counts_the_reclaimable_page_cache_not_only_free_pages(tmp_path, monkeypatch):
    """A machine after a CI run: 2 GB free, 23 GB available. Free pages alone had set the default to one run at a
    time on 2 cores (found running +study=scaling)."""
    import psutil

    (tmp_path / "meminfo").write_text("MemTotal:       24683520 kB\nMemFree:         2033664 kB\n"
                                      "MemAvailable:   23681024 kB\nBuffers: 0 kB\nCached: 0 kB\n"
                                      "Active: 0 kB\nInactive: 0 kB\nShmem: 0 kB\nSReclaimable: 0 kB\n")
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(tmp_path))  # where psutil reads the kernel's numbers
    assert resources.available_memory() == 23681024 * 1024
    monkeypatch.setattr(resources, "cpu_count", lambda: 2)
    assert resources.default_parallelism(135, []) == 2


def test_cpu_count_is_the_cores_this_process_may_use():
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert resources.cpu_count() == expected >= 1


def test_runs_timed_alone_go_one_at_a_time_on_a_cpu_and_one_per_device_on_gpus():
    """A study's round timed on the machine (harness.studies.study.Round with alone): whatever the cores, one run at
    a time on a CPU; on 4 GPUs, four one-GPU runs at once (each alone on its device) or two two-GPU runs."""
    class Planned:
        def __init__(self, gpus):
            self.gpus = gpus

    assert resources.alone_parallelism([Planned(0)] * 6, []) == 1
    assert resources.alone_parallelism([Planned(0)] * 6, [0, 1, 2, 3]) == 1  # CPU runs on a GPU machine
    assert resources.alone_parallelism([Planned(1)] * 6, [0, 1, 2, 3]) == 4
    assert resources.alone_parallelism([Planned(2), Planned(1)], [0, 1, 2, 3]) == 2
