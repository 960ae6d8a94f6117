"""The process-per-run scheduler with stand-in commands (no TensorFlow) and fake GPU ids (no GPU needed)."""
import json
import os
import sys
import time

from harness.launch.scheduler import BLAS_THREADS, Job, Scheduler

RECORD_ENV = (
    "import json, os, sys, time; start = time.time(); time.sleep({sleep}); "
    "json.dump({{'gpus': os.environ.get('CUDA_VISIBLE_DEVICES'), 'threads': os.environ.get('HARNESS_THREADS'), "
    "'blas': {{k: os.environ.get(k) for k in {blas!r}}}, 'start': start, 'end': time.time(), "
    "'share': {{k: os.environ.get(k) for k in ('TF_FORCE_GPU_ALLOW_GROWTH', 'XLA_PYTHON_CLIENT_MEM_FRACTION', "
    "'HARNESS_RUNS_PER_GPU')}}}}, "
    "open(sys.argv[1], 'w')); sys.exit({code})"
)


def stand_in(tmp_path, num, *, gpus=0, devices=None, sleep=0.6, code=0):
    run_dir = tmp_path / "sweep" / str(num)
    out = tmp_path / f"env-{num}.json"
    command = [sys.executable, "-c", RECORD_ENV.format(sleep=sleep, code=code, blas=BLAS_THREADS), str(out)]
    return Job(num=num, overrides=[f"job={num}"], run_dir=run_dir, command=command, gpus=gpus, devices=devices,
               config=lambda: {"batch_size": 8})


def seen(tmp_path, num):
    return json.loads((tmp_path / f"env-{num}.json").read_text())


def test_concurrent_jobs_get_disjoint_gpus_and_a_third_waits(tmp_path):
    jobs = [stand_in(tmp_path, n, gpus=1) for n in range(3)]
    codes = Scheduler(jobs, n_jobs=3, gpu_ids=[5, 7], poll_seconds=0.05).run()
    assert codes == {0: 0, 1: 0, 2: 0}
    runs = [seen(tmp_path, n) for n in range(3)]
    assert {runs[0]["gpus"], runs[1]["gpus"]} == {"5", "7"}
    assert runs[2]["start"] >= min(runs[0]["end"], runs[1]["end"]) - 0.05  # waited for a free GPU
    from harness.launch.resources import cpu_count

    assert all(r["threads"] == str(max(1, cpu_count() // 3)) for r in runs)  # a GPU run's share of the cores too
    assert all(set(r["share"].values()) == {None} for r in runs)  # a GPU of its own: the backends' defaults


def test_runs_sharing_a_gpu_start_with_their_share_of_its_memory_and_of_the_cores(tmp_path, monkeypatch):
    """runs_per_gpu=4 on one GPU: each run starts on it with TensorFlow's memory growth, JAX's memory fraction
    0.9 / 4 and its share of the cores; a CPU job beside them keeps off the GPU."""
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.5")  # the user's, for runs of their own: not inherited
    jobs = [stand_in(tmp_path, n, gpus=1, sleep=0.0) for n in range(4)] + [stand_in(tmp_path, 4, sleep=0.0)]
    assert Scheduler(jobs, n_jobs=5, gpu_ids=[3], runs_per_gpu=4, poll_seconds=0.05).run() == {n: 0 for n in range(5)}
    from harness.launch.resources import cpu_count

    for n in range(4):
        run = seen(tmp_path, n)
        assert run["gpus"] == "3" and run["threads"] == str(max(1, cpu_count() // 5))
        assert run["share"] == {"TF_FORCE_GPU_ALLOW_GROWTH": "true", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.225",
                                "HARNESS_RUNS_PER_GPU": "4"}
    assert seen(tmp_path, 4)["gpus"] == "" and seen(tmp_path, 4)["share"]["HARNESS_RUNS_PER_GPU"] is None


def test_cpu_jobs_run_in_parallel_with_the_cores_split(tmp_path, monkeypatch):
    for name in BLAS_THREADS:
        monkeypatch.delenv(name, raising=False)
    jobs = [stand_in(tmp_path, n, sleep=1.0) for n in range(2)]
    Scheduler(jobs, n_jobs=2, gpu_ids=[], poll_seconds=0.05).run()
    a, b = seen(tmp_path, 0), seen(tmp_path, 1)
    assert a["start"] < b["end"] and b["start"] < a["end"]  # overlapped
    from harness.launch.resources import cpu_count

    assert a["threads"] == str(max(1, cpu_count() // 2))
    # numpy's and SciPy's BLAS get the same share: a second OpenBLAS thread spinning on the other run's core
    # made a run's end-of-run probes 1.7x slower
    assert a["blas"] == b["blas"] == {name: a["threads"] for name in BLAS_THREADS}


def test_a_thread_count_the_user_set_for_blas_is_kept(tmp_path, monkeypatch):
    for name in BLAS_THREADS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")
    Scheduler([stand_in(tmp_path, 0, sleep=0.0)], n_jobs=2, gpu_ids=[], poll_seconds=0.05).run()
    assert seen(tmp_path, 0)["blas"]["OPENBLAS_NUM_THREADS"] == "7"


def test_a_process_that_dies_without_recording_is_marked_failed_and_others_go_on(tmp_path):
    jobs = [stand_in(tmp_path, 0, code=3, sleep=0.1), stand_in(tmp_path, 1, sleep=0.1)]
    codes = Scheduler(jobs, n_jobs=1, gpu_ids=[], poll_seconds=0.05).run()
    assert codes == {0: 3, 1: 0}
    record = json.loads((tmp_path / "sweep" / "0" / "run.json").read_text())
    assert record["status"] == "failed" and record["error"]["type"] == "ProcessExit"
    assert "code 3" in record["error"]["message"] and record["config"] == {"batch_size": 8}


def test_finished_runs_are_skipped(tmp_path):
    job = stand_in(tmp_path, 0)
    job.run_dir.mkdir(parents=True)
    (job.run_dir / "run.json").write_text(json.dumps({"status": "completed"}))
    scheduler = Scheduler([job], n_jobs=1, gpu_ids=[], poll_seconds=0.05)
    assert scheduler.run() == {} and scheduler.skipped == [job]
    assert not (tmp_path / "env-0.json").exists()


def test_progress_reports_counts_and_eta(tmp_path):
    lines = []
    jobs = [stand_in(tmp_path, n, sleep=0.2) for n in range(2)]
    Scheduler(jobs, n_jobs=1, gpu_ids=[], poll_seconds=0.05, progress=lambda line, final: lines.append(line)).run()
    assert "runs 0/2 done · 1 running · 0 failed" in lines[0]
    assert "runs 2/2 done · 0 running" in lines[-1] and "ETA 0:00" in lines[-1]


def test_a_run_refused_before_it_started_leaves_the_files_it_found_alone(tmp_path):
    """Exit 2: its folder is another command's (or its config is invalid); that command's run.json is not ours."""
    from harness.launch.scheduler import REFUSED

    job = stand_in(tmp_path, 0, sleep=0.0, code=REFUSED)
    job.run_dir.mkdir(parents=True)
    other = {"run_id": "elsewhere/0", "status": "running", "epochs_completed": 3}
    (job.run_dir / "run.json").write_text(json.dumps(other))
    assert Scheduler([job], n_jobs=1, gpu_ids=[], poll_seconds=0.05).run() == {0: REFUSED}
    assert json.loads((job.run_dir / "run.json").read_text()) == other


class _Warm:
    """A stand-in warm worker: its backend, alive and reusable, a reply pipe nothing is written to."""

    def __init__(self, backend, threads=None):
        self.backend, self.available, self.closed, self.threads = backend, True, False, threads
        self._replies = os.pipe()
        self.process = type("Process", (), {"stdout": self._replies[0]})()

    def close(self):
        self.closed = True
        for fd in self._replies:
            os.close(fd)


def test_a_warm_worker_takes_only_jobs_of_its_own_backend(tmp_path):
    """Keras's backend is fixed per process: a JAX job never lands in a TensorFlow worker, nor the reverse."""
    scheduler = Scheduler([stand_in(tmp_path, 0)], n_jobs=2, gpu_ids=[])
    tf_worker, jax_worker, dead = _Warm("tensorflow"), _Warm("jax"), _Warm("jax")
    dead.available = False
    scheduler.idle = [jax_worker, tf_worker, dead]
    assert scheduler._idle_worker("jax") is jax_worker and dead.closed
    assert scheduler._idle_worker("jax") is None and scheduler.idle == [tf_worker]
    assert scheduler._idle_worker("tensorflow") is tf_worker and scheduler.idle == []
    job = stand_in(tmp_path, 1)
    job.backend = "jax"
    assert scheduler._env(job, [])["KERAS_BACKEND"] == "jax"


def test_a_round_hands_its_warm_workers_to_the_next_which_takes_those_of_its_share_of_the_cores(tmp_path):
    """A study's rounds: the workers a round leaves idle are the next round's (no second TensorFlow import), each
    taken only by a job of the same backend and share of the cores; a round that hands nothing over closes them."""
    ones, two = _Warm("tensorflow", "1"), _Warm("tensorflow", "2")
    scheduler = Scheduler([], n_jobs=2, gpu_ids=[], warm=[ones, two], hand_over=True)
    scheduler.run()
    assert scheduler.idle == [ones, two] and not ones.closed and not two.closed
    later = Scheduler([], n_jobs=2, gpu_ids=[], warm=scheduler.idle)
    assert later._idle_worker("tensorflow", "1") is ones and later._idle_worker("tensorflow", "1") is None
    later.run()
    assert two.closed and later.idle == []


class _Started:
    """A stand-in for the worker the scheduler starts: its share of the cores from its environment, each job's reply
    at once (exit 0), every start and close counted in `alive`."""

    alive: list = []

    def __init__(self, sweep_dir, env, backend="tensorflow"):
        self.backend, self.threads, self.available, self.closed = backend, env["HARNESS_THREADS"], True, False
        self._replies = os.pipe()
        os.write(self._replies[1], b"x")  # always readable: the scheduler never waits on it
        self.process = type("Process", (), {"stdout": self._replies[0], "pid": os.getpid()})()
        self.sent = False
        _Started.alive.append(self)

    def send(self, args, log):
        self.sent = True

    def result(self):
        done, self.sent = self.sent, False
        return 0 if done else None

    def close(self):
        self.closed = True
        _Started.alive.remove(self)
        for fd in self._replies:
            os.close(fd)


def test_a_round_of_another_share_replaces_the_workers_it_cannot_use_and_hands_on_its_own(tmp_path, monkeypatch):
    """On 4 cores, a round of 8 jobs 4 at a time (a core each), then two rounds of 2 jobs (2 cores each): the second
    round closes a worker of the first for each it starts (never more processes than the first round's 4), and
    hands on its own, which the third round takes without starting any."""
    from harness.launch import scheduler as scheduling

    monkeypatch.setattr(scheduling, "cpu_count", lambda: 4)
    monkeypatch.setattr(scheduling, "Worker", _Started)
    monkeypatch.setattr(_Started, "alive", [])
    most, warm = [], []
    original = scheduling.Scheduler._start

    def start(self, job, gpu_ids):
        running = original(self, job, gpu_ids)
        most.append(len(_Started.alive))
        return running

    monkeypatch.setattr(scheduling.Scheduler, "_start", start)
    for first, count, n_jobs in ((0, 8, 4), (8, 2, 2), (10, 2, 2)):
        jobs = [Job(num=n, overrides=[f"seed={n}"], run_dir=tmp_path / str(n), command=["true"], worker_args=["a"])
                for n in range(first, first + count)]
        before = list(_Started.alive)
        round_ = Scheduler(jobs, n_jobs, [], poll_seconds=0.01, warm=warm, hand_over=True)
        round_.run()
        warm = list(round_.idle)
        started = [w for w in _Started.alive if w not in before]
        if first == 8:
            assert max(most) <= 4 and len(started) == 2 and warm == started  # its own, 2 cores each
        if first == 10:
            assert started == [] and {id(w) for w in warm} == {id(w) for w in _Started.alive}  # taken, none started
    assert {w.threads for w in warm} == {"2"}


WRITE_WEIGHTS_THEN_PROBE = (  # a run's end: its final weights, then its end-of-run probes
    "import pathlib, sys, time; pathlib.Path(sys.argv[1]).mkdir(parents=True, exist_ok=True); "
    "(pathlib.Path(sys.argv[1]) / 'final.weights.npz').write_bytes(b'w'); time.sleep(1.0); "
    "(pathlib.Path(sys.argv[1]) / 'ended').write_text(str(time.time()))"
)


class _SweepEnd:
    """Records what the scheduler offers it; starts once the last run's final weights exist; what it started
    ends after `rounds_end` looks (never, by default)."""

    def __init__(self, rounds_end: int | None = None, then=lambda offers: None):
        self.offers, self.finished_with, self.looks = [], [], 0
        self.rounds_end, self.then = rounds_end, then

    def start_early(self, worker, running):
        started = all((run_dir / "final.weights.npz").exists() for run_dir in running)
        self.offers.append((worker, dict(running), time.time(), started))
        self.then(self.offers)
        return started

    def early_ended(self):
        self.looks += 1
        return self.rounds_end is not None and self.looks >= self.rounds_end

    def finish(self, worker):
        self.finished_with.append(worker)


def test_the_sweep_end_is_offered_an_idle_warm_worker_while_the_last_run_still_runs(tmp_path):
    """The interpolation may start in a warm worker the other slots left idle while the last run writes its
    end-of-run probes; the worker it started in is its own until it finishes, then closed."""
    job = stand_in(tmp_path, 0)
    job.command = [sys.executable, "-c", WRITE_WEIGHTS_THEN_PROBE, str(job.run_dir)]
    scheduler, end, warm = Scheduler([job], n_jobs=2, gpu_ids=[], poll_seconds=0.05), _SweepEnd(), _Warm("tensorflow")
    scheduler.idle = [warm]
    before = time.time()
    scheduler.run(then=end)
    assert [started for *_, started in end.offers][-1]  # offered until it started, then no more
    assert not any(started for *_, started in end.offers[:-1])
    worker, running, offered_at, _ = end.offers[-1]
    assert worker is warm and list(running) == [job.run_dir] and before <= running[job.run_dir] <= offered_at
    assert offered_at < float((job.run_dir / "ended").read_text())  # while the run was still in its probes
    assert end.finished_with == [warm] and warm.closed and scheduler.idle == []


WRITE_WEIGHTS_THEN_WAIT = (  # a run's end that lasts until the file `release` appears (at most 60 s: exit 1)
    "import pathlib, sys, time; run = pathlib.Path(sys.argv[1]); run.mkdir(parents=True, exist_ok=True); "
    "(run / 'final.weights.npz').write_bytes(b'w'); deadline = time.time() + 60\n"
    "while not (run / 'release').exists():\n"
    "    time.sleep(0.01)\n"
    "    if time.time() > deadline: sys.exit(1)\n"
)


def test_the_sweep_end_gets_its_worker_back_and_is_offered_it_again_once_a_round_has_ended(tmp_path):
    """The interpolation computes pairs in rounds as runs end: once what it started in the worker has ended, the
    scheduler offers the same worker again while a run still runs (here the run ends only after a second offer)."""
    job = stand_in(tmp_path, 0)
    job.command = [sys.executable, "-c", WRITE_WEIGHTS_THEN_WAIT, str(job.run_dir)]

    def release_after_two(offers):
        if sum(started for *_, started in offers) == 2:
            (job.run_dir / "release").write_text("")

    end, warm = _SweepEnd(rounds_end=1, then=release_after_two), _Warm("tensorflow")
    scheduler = Scheduler([job], n_jobs=2, gpu_ids=[], poll_seconds=0.05)
    scheduler.idle = [warm]
    assert scheduler.run(then=end) == {0: 0}  # released, not timed out
    started = [worker for worker, *_, started in end.offers if started]
    assert started[:2] == [warm, warm] and end.looks >= 1  # the same worker, given back after the first round
    assert end.finished_with[0] is warm and warm.closed


def test_the_scheduler_wakes_when_a_run_ends_or_a_worker_answers_not_after_a_poll(tmp_path):
    """wait_for_any reports what woke it: a child's exit, a pipe's line; only a still child and a silent pipe wait
    out the timeout (False). The scheduler waits on it between its rounds, so a slot is handed on at once."""
    import os
    import subprocess

    from harness.launch.processes import wait_for_any

    still = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    read, write = os.pipe()
    try:
        assert wait_for_any([still, ended], [], timeout=60) is True  # the exit of one is enough
        assert wait_for_any([still], [read], timeout=0.01) is False  # nothing happened
        os.write(write, b"{}\n")  # a worker's reply
        assert wait_for_any([still], [read], timeout=60) is True
        still.stdin.close()  # the still child ends once its input does
        assert wait_for_any([still], [], timeout=60) is True
    finally:
        still.kill()
        still.wait()
        os.close(read)
        os.close(write)


def test_the_longest_runs_start_first_and_runs_of_unknown_length_last_in_their_order(tmp_path):
    """Longest processing time first: the last runs to end are short ones, so a slot idles less at the sweep's end;
    with one slot the order changes no time, and the plan's order stays."""
    for n_jobs, expected in ((2, [1, 3, 0, 2, 4]), (1, [0, 1, 2, 3, 4])):
        jobs = [stand_in(tmp_path / str(n_jobs), num, sleep=0.0) for num in range(5)]
        for job, steps in zip(jobs, (10, 30, None, 20, None)):
            job.steps = steps
        scheduler, started = Scheduler(jobs, n_jobs=n_jobs, gpu_ids=[], poll_seconds=0.05), []
        start = scheduler._start
        scheduler._start = lambda job, gpu_ids: (started.append(job.num), start(job, gpu_ids))[1]
        assert scheduler.run() == {n: 0 for n in range(5)}
        assert started == expected

