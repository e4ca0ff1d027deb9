"""Background jobs of the page: one Dash background-callback manager, and jobs that always end.

Work that may take longer than a synchronous request's budget runs as a Dash background callback
(``background=True``) on the manager from ``manager()``, so no server thread waits for it:

- without ``REDIS_URL``: ``JobManager`` (Dash's ``DiskcacheManager`` with its own processes). A
  job is a fork of a clean job server, never of a threaded web worker (``job_runner``); results go
  through a diskcache folder inside the server's private jobs folder (``job_table.private_dir``).
  The host runs at most ``PPVIZ_JOBS_RUNNING`` jobs at once (default: its cores), queues
  ``PPVIZ_JOBS_QUEUED`` more, allows ``PPVIZ_JOBS_PER_CLIENT`` per client and
  ``PPVIZ_JOB_MEMORY_MB`` of memory per job, and ends a job ``PPVIZ_JOB_ABANDONED_S`` after its
  page's last poll, or after ``PPVIZ_JOB_MAX_S`` of running (``PPVIZ_JOB_QUEUE_S`` of waiting);
- with ``REDIS_URL``: ``CeleryManager`` on that Redis (broker and results). Jobs run in Celery
  workers (``celery -A app:celery_app worker``), whose concurrency is the cap; the time limit is Celery's.

A job calls ``watch()`` first: it waits there for a slot (telling the page its place in the queue
through ``on_wait``) or raises ``JobRefused``. A callback catches ``STOPPED`` and shows ``why(e)``::

    from ppviz.web.common import jobs

    @callback(Output(...), Input(...), background=True, manager=jobs.manager(),
              progress=[...], cancel=[...], interval=jobs.POLL_MS)
    def long_work(set_progress, value):
        try:
            jobs.watch(on_wait=lambda text: set_progress(text))
            ...
        except jobs.STOPPED as e:
            return jobs.why(e)
"""

from __future__ import annotations

import importlib
import os
import secrets
from functools import cache

from . import job_runner, job_table
from .job_runner import JobRefused, JobStopped, JobTimeout  # noqa: F401  (what callbacks catch)

POLL_MS = 500  # how often a page asks for a job's result (and so shows it is still open)
JOB_MAX_S = job_table.Limits.from_env().run_s  # no job runs longer
JOB_RESULT_S = 600  # a result nobody fetched is dropped after this
CACHE_BYTES = 512 * 2**20  # results on disk; the oldest go first past this
MAX_HANDLE_CHARS = 128  # a signed job handle is a pid, "~" and 64 hex digits
STOPPED = (JobStopped, MemoryError)  # what a job's callback catches to show why it stopped


def why(error: BaseException) -> str:
    """What to tell the page about a job that stopped early."""
    if isinstance(error, MemoryError):
        job = job_runner.current()
        gib = (job.limits if job else job_table.Limits.from_env()).memory_bytes / 2**30
        return f"needed more than {gib:g} GiB of memory"
    return str(error)


def jobs_dir() -> str:
    """The server's private jobs folder (see ``job_table.private_dir``)."""
    return job_table.private_dir()


@cache
def manager():
    """The app's one background-callback manager (Celery on ``REDIS_URL``, else ``JobManager``)."""
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        from celery import Celery  # only with REDIS_URL: pip install "dash[celery]"
        from dash import CeleryManager

        app = Celery("ppviz", broker=redis_url, backend=redis_url)
        app.conf.task_time_limit = JOB_MAX_S + 10
        app.conf.task_soft_time_limit = JOB_MAX_S
        return CeleryManager(app)
    return _job_manager()(_store(), expire=JOB_RESULT_S)


def _job_manager():
    from dash import DiskcacheManager

    class JobManager(DiskcacheManager):
        """Dash's diskcache manager, its jobs started by ``job_runner`` and known by ``job_table``."""

        def make_job_fn(self, fn, progress, key=None):
            job_fn = super().make_job_fn(fn, progress, key)
            job_fn.ppviz_ref = (fn.__module__, key)  # a job process finds the function by these: no code is pickled
            return job_fn

        def call_job_fn(self, key, job_fn, args, context):
            payload = (*job_fn.ppviz_ref, key, self._make_progress_key(key), args, dict(context))
            return job_runner.start(_call, payload, _client(), job_table.Limits.from_env())

        def terminate_job(self, job):
            record = job_table.record_of(_pid(job))
            if record is not None:
                job_table.kill(record.pid, record.started)

        def terminate_unhealthy_job(self, job):
            return False  # the reaper ends stuck jobs

        def job_running(self, job):
            return job_table.record_of(_pid(job)) is not None

    return JobManager


def _pid(job) -> int:
    try:
        return int(job)
    except (TypeError, ValueError):
        return 0


def _call(module: str, fn_key: str, result_key: str, progress_key: str, args, context: dict) -> None:
    """In the job process: run the background callback ``fn_key``, registered by ``module``."""
    importlib.import_module(module)  # the job server imported it already, unless it came later
    if _store().directory != os.path.join(jobs_dir(), "cache"):  # the job server started under another folder
        _store.cache_clear()
        manager.cache_clear()  # a new manager registers every callback again, on this folder's store
    manager().func_registry[fn_key](result_key, progress_key, args, context)


def _client() -> str:
    """Who asked (the peer's address; behind the shipped proxy, the address it forwarded)."""
    from flask import has_request_context, request

    return (request.remote_addr or "unknown") if has_request_context() else "local"


def celery_app():
    """The Celery app behind the manager (None without ``REDIS_URL``), for ``celery -A app:celery_app worker``."""
    m = manager()
    return getattr(m, "handle", None) if os.environ.get("REDIS_URL") else None


@cache
def _store():
    import diskcache

    # Results are deleted when fetched; past CACHE_BYTES the oldest go.
    folder = os.path.join(jobs_dir(), "cache")
    return diskcache.Cache(folder, size_limit=CACHE_BYTES, eviction_policy="least-recently-stored")


@cache
def secret_key() -> bytes | None:
    """The secret that signs Dash's job handles, the same in every process of this server.

    Dash would keep it in the result store, where evicting it would orphan every job in flight;
    here it is a file in the private jobs folder, created once (atomically) by whichever process
    comes first. With ``REDIS_URL``: ``$PPVIZ_SECRET_KEY``, else Dash's own (kept in Redis).
    """
    if os.environ.get("REDIS_URL"):
        key = os.environ.get("PPVIZ_SECRET_KEY")
        return key.encode() if key else None
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
    """A poll for a running job (a Flask ``before_request`` hook): its page is still open.

    The handle is checked first (signed for this page load, of bounded length): a forged or
    oversized one writes nothing and keeps nobody's job alive.
    """
    if os.environ.get("REDIS_URL") or not path.endswith("_dash-update-component"):
        return
    signed = args.get("job")
    if not signed or len(signed) > MAX_HANDLE_CHARS:
        return
    from dash import _callback_signing as signing  # Dash's own handle format (dash 4.4)

    key = secret_key()
    end = args.get("endId")
    end_id = signing.unsign(key, signing.END_SCOPE, end) if end and len(end) <= MAX_HANDLE_CHARS else None
    job = signing.unsign(key, signing.job_scope(end_id), signed)
    if job and job.isdigit():
        job_table.touch(int(job))


def watch(on_wait=None) -> None:
    """Call first in a background callback: wait for a slot (``on_wait(text)`` hears the queue's
    news), or raise ``JobRefused``. Outside a job process (Celery, a direct call) it does nothing."""
    job = job_runner.current()
    if job is not None:
        job.wait_turn(on_wait)


def warm() -> None:
    """Start this worker's job server ahead of the first job (gunicorn's ``post_worker_init``)."""
    if not os.environ.get("REDIS_URL"):
        job_runner.warm()


def stop_server() -> None:
    """Stop this worker's job server (gunicorn's ``worker_exit``)."""
    if not os.environ.get("REDIS_URL"):
        job_runner.stop_server()
