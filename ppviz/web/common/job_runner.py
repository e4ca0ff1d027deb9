"""Where background jobs run: processes forked from a clean job server, never from a web worker.

A gunicorn worker has threads; a process forked from it inherits whatever lock another thread held
at that moment (SQLite's, the allocator's) with nobody left to release it, and can hang before its
first line (seen: 8 of 80 jobs). So a worker never forks a job itself: the standard library's
``forkserver`` starts one single-threaded server per worker (with the page's modules imported
once), and every job is a fork of that clean process. The job then, before
anything else: leads its own process group, arms its time limits (a timer that raises, and a CPU
limit the kernel enforces), bounds its memory (``RLIMIT_DATA``), and enters the job table
(``job_table``: caps per host and per client), then starts a guard thread that ends it when its
page stops polling. Web workers run a reaper thread that kills any job past its deadline from
outside, whatever it is doing.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import resource
import signal
import threading
import time
from multiprocessing import forkserver, popen_forkserver, reduction, spawn, util
from multiprocessing.context import ForkServerProcess, set_spawning_popen

from . import job_table

REAP_EVERY_S = 1.0
JOB_NICENESS = 10  # jobs yield the CPU to the page's own requests
ENTER_WAIT_S = 5.0  # a job enters the table within milliseconds of its start


class JobStopped(Exception):
    """A job ended early for a reason its page shows (the message says it and what to do)."""


class JobTimeout(JobStopped):
    """The job ran past its time limit, or waited past its queue limit."""


class JobRefused(JobStopped):
    """The host or this client has as many jobs as allowed."""


_context = None
_reaper: threading.Thread | None = None
_reaper_lock = threading.Lock()
_job: Job | None = None  # set in a job process: the running job's own state


def context():
    """The forkserver context; its server imports once the modules of every background callback
    registered so far (a job imports its own module too, should it come later) and loads the
    compiled event pass."""
    global _context
    if _context is None:
        from dash.background_callback.managers import BaseBackgroundCallbackManager as Managers

        ctx = multiprocessing.get_context("forkserver")
        callbacks = sorted({fn.__module__ for _, fn, _ in Managers.functions})
        ctx.set_forkserver_preload(["psutil", "ppviz.web.common.compiled", *callbacks])
        _context = ctx
    return _context


class _Popen(popen_forkserver.Popen):
    """The standard forkserver launch, less one step: the child does not run the parent's main
    script again (``__mp_main__``): a server's main is gunicorn's script or app.py, and a job needs
    neither. It gets only ``sys_path`` and the working directory."""

    def _launch(self, process_obj):
        prep = {k: v for k, v in spawn.get_preparation_data(process_obj._name).items() if not k.startswith("init_main")}
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        parent_w = os.dup(w)  # the child's sentinel of this parent, as the standard launch keeps it
        self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _JobProcess(ForkServerProcess):
    _Popen = staticmethod(_Popen)


def warm() -> None:
    """Start this worker's reaper and job server now, so the first job does not wait for its imports (~0.7 s)."""
    context()
    ensure_reaper()
    threading.Thread(target=forkserver.ensure_running, daemon=True, name="ppviz-job-server").start()


def stop_server() -> None:
    """Stop this worker's job server and resource tracker and wait for them (gunicorn's
    ``worker_exit``), so a stopped server leaves no process behind. Running jobs are not theirs
    to end: the table's owner does that (``job_table.stop_all``)."""
    from multiprocessing import resource_tracker

    for helper in (forkserver._forkserver, resource_tracker._resource_tracker):  # the stdlib's own stop
        with contextlib.suppress(Exception):
            helper._stop()


def start(target, args: tuple, client: str, limits: job_table.Limits) -> int:
    """Run ``target(*args)`` as a job for ``client``; its pid."""
    ensure_reaper()
    folder = job_table.private_dir()  # passed on: the job server may have started with another environment
    context()
    process = _JobProcess(target=_run, args=(target, args, client, limits, folder), daemon=False)
    process.start()
    # A job outlives a worker that gunicorn recycles (max_requests): the worker's exit must neither
    # wait for it (multiprocessing joins its children at exit) nor end it. The table knows it.
    multiprocessing.process._children.discard(process)
    # Return once the job is in the table, so a stop that follows at once finds it to end.
    deadline = time.monotonic() + ENTER_WAIT_S
    while not job_table.entered(process.pid) and process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.002)
    return process.pid


def ensure_reaper() -> None:
    """One reaper thread per web worker (started with its first job, never in gunicorn's master)."""
    global _reaper
    with _reaper_lock:
        if _reaper is None or not _reaper.is_alive() or _reaper.ident is None:
            _reaper = threading.Thread(target=_reap_forever, daemon=True, name="ppviz-job-reaper")
            _reaper.start()


def _reap_forever() -> None:
    # dash.testing's threaded server stops every thread it did not start with SystemExit: end quietly
    # (the next job starts another reaper).
    with contextlib.suppress(SystemExit):
        while True:
            time.sleep(REAP_EVERY_S)
            with contextlib.suppress(Exception):  # a bad moment on the disk: try again next round
                job_table.reap()


class Job:
    """A job process's own state: its table entry (waiting until its record says running) and limits."""

    def __init__(self, entry: job_table.Entry, limits: job_table.Limits):
        self.entry, self.limits = entry, limits

    def timeout_message(self) -> str:
        if self.entry.record.running_at is None:
            return f"waited {self.limits.queue_s:g} s for a free slot (the server is busy): try again in a minute"
        return f"took longer than {self.limits.run_s:g} s"

    def wait_turn(self, on_wait=None) -> None:
        """Wait for a slot, telling the page how many jobs are ahead; then arm the run's time limit."""
        if self.entry.record.refused:
            raise JobRefused(self.entry.record.refused)
        told = None
        while True:
            ahead = self.entry.ahead()
            # First come, first served: a job takes a slot only if those ahead cannot fill the free ones.
            if ahead < self.entry.free_slots(self.limits.running) and self.entry.take_slot(self.limits.running):
                break
            if on_wait is not None and ahead != told:
                on_wait(_queue_text(ahead))
                told = ahead
            time.sleep(0.1)
        signal.setitimer(signal.ITIMER_REAL, self.limits.run_s)
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = int(used.ru_utime + used.ru_stime + self.limits.run_s) + 1
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, hard), min(cpu + 5, hard)))  # SIGXCPU, then SIGKILL


def _queue_text(ahead: int) -> str:
    if ahead == 0:
        return "waiting for a free slot: you are next"
    return f"waiting for a free slot: {ahead} job{'s' if ahead > 1 else ''} ahead of you"


def _run(target, args: tuple, client: str, limits: job_table.Limits, folder: str) -> None:
    """A job process's first and last steps around ``target``: limits first, the table second."""
    global _job
    os.setpgid(0, 0)
    os.nice(JOB_NICENESS)  # the web workers' requests come first
    os.environ[job_table.ENV_DIR] = folder

    def too_long(signum, frame):
        raise JobTimeout(_job.timeout_message() if _job else "stopped by its time limit")

    signal.signal(signal.SIGALRM, too_long)
    signal.signal(signal.SIGXCPU, too_long)
    signal.setitimer(signal.ITIMER_REAL, limits.queue_s)
    cpu = int(limits.queue_s + limits.run_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    data = _data_bytes() + limits.memory_bytes
    resource.setrlimit(resource.RLIMIT_DATA, (data, data))
    import psutil

    _job = Job(job_table.Entry.enter(client, limits, psutil.Process().create_time()), limits)
    threading.Thread(target=_guard, args=(_job,), daemon=True, name="ppviz-job-guard").start()
    target(*args)


def _guard(job: Job) -> None:
    """End this process at once when its page stopped polling, or past its deadline (a stuck job)."""
    while True:
        time.sleep(0.25)
        now = time.time()
        if now - job.entry.beat() > job.limits.abandoned_s or now > job.entry.record.deadline + 1:
            os._exit(0)


def _data_bytes() -> int:
    """This process's data segment now (VmData): the memory bound is on top of it."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def current() -> Job | None:
    """The job this process runs (None outside a job process)."""
    return _job
