"""The host's table of background jobs: a private folder of small files, one per job, and slots.

Every process of the server (web workers, their job processes) shares it through the folder alone:
no SQLite, no lock a fork could inherit half-taken. A job holds an ``flock`` on its own record for
its whole life and on one slot file while it runs; the kernel drops both when the process dies,
however it dies, so a record nobody holds is a finished job and a free slot needs no cleanup.

- ``<dir>/table/<pid>``: the job's record (JSON: client, limits, when it queued and started),
  always replaced whole (written aside, then renamed), so a reader never sees half of it.
- ``<dir>/table/<pid>.lock``: held by the job for its life. Its mtime is the job's heartbeat: a
  poll from its page touches it (``touch``).
- ``<dir>/slots/<i>``: one file per job allowed to run at once.
- ``<dir>/admit.lock``: held for the moment a job counts the table and enters it.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, field

ENV_DIR = "PPVIZ_JOBS_DIR"
KILL_WAIT_S = 1.0
_made_here: list[tuple[str, int]] = []  # (folder, pid of the process that made it): removed at that process's exit


def _env_number(name: str, default: float) -> float:
    text = os.environ.get(name, "")
    try:
        value = float(text) if text else default
    except ValueError:
        raise RuntimeError(f"{name}={text!r} is not a number") from None
    if not value > 0:
        raise RuntimeError(f"{name}={text!r} must be above 0")
    return value


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Limits:
    """What one job may take, read from the environment by the web worker that starts it."""

    run_s: float = 90.0  # PPVIZ_JOB_MAX_S: no job runs longer
    queue_s: float = 60.0  # PPVIZ_JOB_QUEUE_S: no job waits longer for a slot
    abandoned_s: float = 5.0  # PPVIZ_JOB_ABANDONED_S: no poll from its page for this long ends it
    memory_bytes: int = 1 << 30  # PPVIZ_JOB_MEMORY_MB: data a job may allocate on top of its start
    running: int = field(default_factory=_cores)  # PPVIZ_JOBS_RUNNING: jobs running at once on the host
    queued: int = 8  # PPVIZ_JOBS_QUEUED: jobs waiting for a slot at once
    per_client: int = 2  # PPVIZ_JOBS_PER_CLIENT: jobs running or waiting for one client

    @classmethod
    def from_env(cls) -> Limits:
        d = cls()
        return cls(
            run_s=_env_number("PPVIZ_JOB_MAX_S", d.run_s),
            queue_s=_env_number("PPVIZ_JOB_QUEUE_S", d.queue_s),
            abandoned_s=_env_number("PPVIZ_JOB_ABANDONED_S", d.abandoned_s),
            memory_bytes=int(_env_number("PPVIZ_JOB_MEMORY_MB", d.memory_bytes / 2**20) * 2**20),
            running=int(_env_number("PPVIZ_JOBS_RUNNING", d.running)),
            queued=int(_env_number("PPVIZ_JOBS_QUEUED", d.queued)),
            per_client=int(_env_number("PPVIZ_JOBS_PER_CLIENT", d.per_client)),
        )


def private_dir() -> str:
    """The jobs folder: ``$PPVIZ_JOBS_DIR`` checked to be ours alone, or a new ``mkdtemp`` folder.

    A new folder's path goes into the environment, so the processes started after this (gunicorn's
    workers, the job server) share it; the process that made it removes it at exit.
    """
    path = os.environ.get(ENV_DIR)
    if not path:
        path = tempfile.mkdtemp(prefix="ppviz-jobs-")
        os.environ[ENV_DIR] = path
        _made_here.append((path, os.getpid()))
        atexit.register(remove_private_dir)
    else:
        os.makedirs(path, mode=0o700, exist_ok=True)
    _check_private(path)
    for sub in ("table", "slots"):
        os.makedirs(os.path.join(path, sub), mode=0o700, exist_ok=True)
    return path


def _check_private(path: str) -> None:
    """Refuse a folder another user could have made or can read: it holds the signing secret and results."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise RuntimeError(f"{ENV_DIR}={path} is not a folder (a symbolic link is refused): choose another path")
    if info.st_uid != os.geteuid():
        raise RuntimeError(f"{ENV_DIR}={path} belongs to uid {info.st_uid}, not to this server's: choose another path")
    if info.st_mode & 0o077:
        raise RuntimeError(
            f"{ENV_DIR}={path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}): "
            "chmod 700 it, or choose another path"
        )


def remove_private_dir() -> None:
    """End the jobs of the folder this process made, and remove it (nothing if it came from the
    environment). A forked child (a gunicorn worker) inherits the atexit hook but not the folder:
    only the process that made it removes it, so a recycled worker leaves the server's jobs alone."""
    mine = [path for path, pid in _made_here if pid == os.getpid()]
    if os.environ.get(ENV_DIR) in mine:
        with contextlib.suppress(OSError):
            stop_all()
    for path in mine:
        shutil.rmtree(path, ignore_errors=True)
    _made_here.clear()


def _path(*parts: str) -> str:
    return os.path.join(os.environ.get(ENV_DIR) or private_dir(), *parts)


def _held(path: str) -> bool | None:
    """Whether some live process holds the file's lock (None: the file is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@dataclass
class Record:
    pid: int
    client: str
    limits: dict
    queued_at: float
    started: float  # the process's start time as psutil reports it (tells a reused pid apart)
    running_at: float | None = None
    refused: str | None = None  # why it may not run (it ends as soon as its page is told): counts for nobody

    @property
    def deadline(self) -> float:
        """When this job must have ended, in time.time() seconds."""
        lim = self.limits
        if self.running_at is None:
            return self.queued_at + lim["queue_s"]
        return self.running_at + lim["run_s"]


def live() -> list[tuple[Record, float]]:
    """Every live job's record and its last heartbeat; the records of ended jobs are removed."""
    out = []
    folder = _path("table")
    for name in os.listdir(folder):
        if not name.isdigit():
            continue
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                record = Record(**json.load(f))
            beat = os.stat(f"{path}.lock").st_mtime
        except FileNotFoundError:
            continue  # removed: the job ended
        except (OSError, ValueError, TypeError):
            continue  # not a record of ours
        if _held(f"{path}.lock"):
            out.append((record, beat))
        else:
            _remove(path)
            _remove(f"{path}.lock")
    return out


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def entered(pid: int) -> bool:
    """Whether job ``pid`` has its record (it may have ended since)."""
    return os.path.exists(_path("table", str(pid)))


def touch(pid: int) -> bool:
    """A poll from the job's page: its heartbeat. Only an existing record is touched (nothing is created)."""
    try:
        os.utime(_path("table", f"{pid}.lock"))
    except OSError:
        return False
    return True


def _refusal(client: str, limits: Limits, others: list[Record]) -> str | None:
    """Why a new job of ``client`` may not run beside ``others`` (None: it may)."""
    mine = sum(1 for r in others if r.client == client)
    if mine >= limits.per_client:
        return (
            f"you already have {mine} background job{'s' if mine > 1 else ''} running or waiting "
            f"(at most {limits.per_client} per user): wait for one to end, or stop it"
        )
    if len(others) >= limits.running + limits.queued:
        return f"the server is busy ({len(others)} background jobs running or waiting): try again in a minute"
    return None


class Entry:
    """This process's own record, held (locked) for its life."""

    def __init__(self, record: Record, fd: int):
        self.record, self.fd, self.slot_fd = record, fd, None

    @classmethod
    def enter(cls, client: str, limits: Limits, started: float) -> Entry:
        """Count the table and enter it; a job past a cap enters refused, saying why (``record.refused``)."""
        lock = os.open(_path("admit.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            record = Record(os.getpid(), client, asdict(limits), time.time(), started)
            record.refused = _refusal(client, limits, [r for r, _ in live() if not r.refused])
            path = _path("table", str(record.pid))
            fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)  # held before the record is visible: never seen unheld
            _publish(path, record)
            return cls(record, fd)
        finally:
            os.close(lock)

    def ahead(self) -> int:
        """Jobs that queued before this one and still wait."""
        me = self.record
        return sum(
            1
            for r, _ in live()
            if r.running_at is None and not r.refused and (r.queued_at, r.pid) < (me.queued_at, me.pid)
        )

    def free_slots(self, slots: int) -> int:
        """Slots no job holds now."""
        return sum(1 for i in range(slots) if not _held(_path("slots", str(i))))

    def take_slot(self, slots: int) -> bool:
        """Take a free slot (and mark the record running), or say there is none."""
        for i in range(slots):
            fd = os.open(_path("slots", str(i)), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.slot_fd = fd
            self.record.running_at = time.time()
            _publish(_path("table", str(self.record.pid)), self.record)
            return True
        return False

    def beat(self) -> float:
        """The last heartbeat (mtime of the held lock file)."""
        return os.fstat(self.fd).st_mtime


def _publish(path: str, record: Record) -> None:
    """Write ``record`` aside and rename it over ``path``: a reader sees the old text or the new, whole."""
    draft = f"{path}.new"
    with open(draft, "w", opener=lambda p, flags: os.open(p, flags, 0o600)) as f:
        f.write(json.dumps(asdict(record)))
    os.replace(draft, path)


def kill(pid: int, started: float | None = None) -> bool:
    """End a job and its process group at once, if ``pid`` is still that job (not a reused pid)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        if started is not None and abs(proc.create_time() - started) > 0.01:
            return False
        os.killpg(pid, signal.SIGKILL)  # each job leads its own group
        proc.wait(KILL_WAIT_S)  # gone (its locks released) before the caller counts the table again
    except (psutil.NoSuchProcess, ProcessLookupError, psutil.TimeoutExpired):
        return False
    except PermissionError:
        return False
    except OSError as e:
        if e.errno != errno.ESRCH:
            raise
        return False
    return True


def record_of(pid: int) -> Record | None:
    """The live job ``pid``'s record, or None."""
    return next((r for r, _ in live() if r.pid == pid), None)


def reap(now: float | None = None) -> list[int]:
    """End every job past its deadline or abandoned by its page; the pids ended."""
    now = time.time() if now is None else now
    ended = []
    for record, beat in live():
        grace = 2.0
        late = now > record.deadline + grace
        abandoned = now - beat > record.limits["abandoned_s"] + grace
        if (late or abandoned) and kill(record.pid, record.started):
            ended.append(record.pid)
    return ended


def stop_all() -> None:
    """End every job of the table (the server stops)."""
    for record, _ in live():
        kill(record.pid, record.started)
