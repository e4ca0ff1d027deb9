"""Background jobs of the page: one Dash background-callback manager, and jobs that end themselves.

Work that may take longer than a synchronous request's budget runs as a Dash background callback
(``background=True``) on the manager from ``manager()``, so no server thread waits for it:

- without ``REDIS_URL``: ``DiskcacheManager``. A job is a child process of the server worker;
  results go through a diskcache directory that every worker of the host shares
  (``$PPVIZ_JOBS_DIR``, default ``<tmp>/ppviz-jobs-<uid>``);
- with ``REDIS_URL``: ``CeleryManager`` on that Redis (broker and results). Jobs run in Celery
  workers, started with ``celery -A app:celery_app worker`` (``pip install "dash[celery]"``).

A job calls ``watch()`` first. It then stops by itself when the page that asked for it stops
polling (a closed tab: the server records each poll with ``on_request``) or when it has run for
``JOB_MAX_S``. A new request for the same callback, or a change of a ``cancel`` input, stops it
through Dash (``oldJob`` / ``cancel``). How to use it in a new page::

    from ppviz.web import jobs

    @callback(Output(...), Input(...), background=True, manager=jobs.manager(),
              progress=[...], cancel=[...], interval=jobs.POLL_MS)
    def long_work(set_progress, value):
        jobs.watch()
        ...
"""

from __future__ import annotations

import os
import secrets
import signal
import tempfile
import threading
import time
from functools import cache

POLL_MS = 500  # how often a page asks for a job's result (and so shows it is still open)
ABANDONED_S = float(os.environ.get("PPVIZ_JOB_ABANDONED_S", "5"))  # no poll for this long: the tab is gone
JOB_MAX_S = float(os.environ.get("PPVIZ_JOB_MAX_S", "90"))  # no job runs longer
JOB_RESULT_S = 600  # a result nobody fetched is dropped after this
CACHE_BYTES = 512 * 2**20  # results and heartbeats on disk; the oldest go first past this
_BEAT = "ppviz-beat:"


class JobTimeout(Exception):
    """Raised inside a job that ran for ``JOB_MAX_S``."""


def jobs_dir() -> str:
    default = os.path.join(tempfile.gettempdir(), f"ppviz-jobs-{os.getuid()}")
    return os.environ.get("PPVIZ_JOBS_DIR", default)


@cache
def manager():
    """The app's one background-callback manager (Celery on ``REDIS_URL``, else diskcache)."""
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        from celery import Celery  # only with REDIS_URL: pip install "dash[celery]"
        from dash import CeleryManager

        app = Celery("ppviz", broker=redis_url, backend=redis_url)
        app.conf.task_time_limit = JOB_MAX_S + 10
        app.conf.task_soft_time_limit = JOB_MAX_S
        return CeleryManager(app)
    from dash import DiskcacheManager

    return DiskcacheManager(_store(), expire=JOB_RESULT_S)


def celery_app():
    """The Celery app behind the manager (None without ``REDIS_URL``), for ``celery -A app:celery_app worker``."""
    m = manager()
    return getattr(m, "handle", None) if os.environ.get("REDIS_URL") else None


@cache
def _store():
    import diskcache

    # Results are deleted when fetched; past CACHE_BYTES the oldest go (Dash's signing secret is
    # not kept here: see secret_key).
    return diskcache.Cache(jobs_dir(), size_limit=CACHE_BYTES, eviction_policy="least-recently-stored")


def secret_key() -> bytes | None:
    """The secret that signs Dash's job handles, the same in every process of this host.

    Dash would keep it in the result store, where evicting it would orphan every job in flight;
    here it is a file in the jobs directory, created once (atomically) by whichever process comes
    first. With ``REDIS_URL``: ``$PPVIZ_SECRET_KEY``, else Dash's own (kept in Redis).
    """
    if os.environ.get("REDIS_URL"):
        key = os.environ.get("PPVIZ_SECRET_KEY")
        return key.encode() if key else None
    os.makedirs(jobs_dir(), mode=0o700, exist_ok=True)
    path = os.path.join(jobs_dir(), "secret")
    if not os.path.exists(path):
        draft = f"{path}.{os.getpid()}"
        with open(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(secrets.token_bytes(32))
        try:
            os.link(draft, path)  # atomic: the first process's secret wins
        except FileExistsError:
            pass
        finally:
            os.unlink(draft)
    with open(path, "rb") as f:
        return f.read()


def on_request(path: str, args) -> None:
    """Record a poll for a running job (a Flask ``before_request`` hook): the page is still open."""
    if os.environ.get("REDIS_URL") or not path.endswith("_dash-update-component"):
        return
    job = args.get("job") or ""
    pid = job.split("~", 1)[0]
    if pid.isdigit():
        _store().set(_BEAT + pid, time.time(), expire=600)


def watch() -> None:
    """Make this job stop when nobody polls for it any more, or after ``JOB_MAX_S`` (raises JobTimeout).

    Call it first in a background callback. With Celery the time limit is Celery's own.
    """
    if os.environ.get("REDIS_URL") or threading.current_thread() is not threading.main_thread():
        return
    pid = os.getpid()
    store = _store()
    store.set(_BEAT + str(pid), time.time(), expire=600)
    started = time.monotonic()

    def too_long(signum, frame):
        raise JobTimeout(f"stopped after {JOB_MAX_S:g} s")

    signal.signal(signal.SIGALRM, too_long)
    signal.setitimer(signal.ITIMER_REAL, JOB_MAX_S)

    def guard():
        while True:
            time.sleep(0.25)
            beat = store.get(_BEAT + str(pid), 0.0)
            if time.time() - beat > ABANDONED_S or time.monotonic() - started > JOB_MAX_S + 5:
                os._exit(0)  # the page is gone (or the job ignored its time limit): free the CPU now

    threading.Thread(target=guard, daemon=True, name="ppviz-job-guard").start()
