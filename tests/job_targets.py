"""Job bodies for tests/test_web_jobs.py: run in job processes (forked from the job server), so
module-level and importable; each writes what happened to a file the test reads."""

from __future__ import annotations

import signal
import time
from dataclasses import replace

import psutil

from ppviz.web.common import job_runner, jobs


def _write(path: str, text: str) -> None:
    with open(path, "a") as f:
        f.write(text + "\n")


def sleeper(path: str, seconds: float) -> None:
    """Wait for a slot (writing the queue's news), sleep, say how it ended."""
    try:
        jobs.watch(on_wait=lambda text: _write(path, "wait: " + text))
        _write(path, "running")
        time.sleep(seconds)
        _write(path, "done")
    except jobs.STOPPED as e:
        _write(path, "stopped: " + jobs.why(e))


def hog(path: str, gib: float) -> None:
    """Allocate ``gib`` GiB and touch it."""
    import numpy as np

    try:
        jobs.watch()
        block = np.ones(int(gib * 2**30) // 8)
        _write(path, f"allocated {block.nbytes}")
    except jobs.STOPPED as e:
        _write(path, "stopped: " + jobs.why(e))


def stubborn(path: str) -> None:
    """A job whose own protections fail: it ignores its timer and CPU signals and its guard believes
    its deadline is far away. Only the reaper, from outside, can end it."""
    jobs.watch()
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    entry = job_runner.current().entry
    entry.record = replace(entry.record, running_at=time.time() + 1e6)  # in memory only: the table keeps the truth
    _write(path, "running")
    while True:
        time.sleep(0.05)


def jobs_under(server_pid: int, settle_s: float = 5.0) -> list[psutil.Process]:
    """The job processes left under a server: the children of every job server (forkserver) under it.

    A job that ended stays listed (a zombie) until its job server reaps it on SIGCHLD, which on a busy
    machine can lag its end: the list is read again for up to ``settle_s`` until it is empty."""
    deadline = time.monotonic() + settle_s
    while True:
        out = []
        for proc in psutil.Process(server_pid).children(recursive=True):
            try:
                if "forkserver" in " ".join(proc.cmdline()):
                    out += proc.children(recursive=True)
            except psutil.Error:
                pass
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.1)
