"""Background jobs: a clean start, caps per host and per client, a queue that says where you are,
a memory bound, time limits enforced from inside and from outside, heartbeats only for real handles,
and a jobs folder nobody else can plant things in. Jobs here run the bodies of tests/job_targets.py."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import job_targets
import psutil
import pytest

import app  # the page's job manager, made now on the server's own folder (tests below switch folders)
from ppviz.web.common import job_runner, job_table, jobs

BASE = job_table.Limits(run_s=20, queue_s=20, abandoned_s=600, memory_bytes=2**30, running=2, queued=8, per_client=2)


def read(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def table(tmp_path, monkeypatch):
    """A jobs folder of its own, and every job it started ended afterwards."""
    monkeypatch.setenv(job_table.ENV_DIR, str(tmp_path / "jobs"))
    job_table.private_dir()
    started: list[int] = []
    yield started
    for pid in started:
        job_table.kill(pid)


def start(table, tmp_path, name: str, body, *args, client: str = "a", limits=BASE) -> tuple[int, Path]:
    out = tmp_path / f"{name}.txt"
    pid = job_runner.start(body, (str(out), *args), client, limits)
    table.append(pid)
    return pid, out


def test_a_client_past_its_share_and_a_full_host_are_refused_with_a_reason(table, tmp_path):
    a1, _ = start(table, tmp_path, "a1", job_targets.sleeper, 30)
    a2, _ = start(table, tmp_path, "a2", job_targets.sleeper, 30)
    _, a3 = start(table, tmp_path, "a3", job_targets.sleeper, 30)
    assert wait_for(lambda: read(a3)), "the third job of one client said nothing"
    assert read(a3) == ["stopped: you already have 2 background jobs running or waiting (at most 2 per user): "
                        "wait for one to end, or stop it"]  # fmt: skip
    small = replace(BASE, running=1, queued=1)  # a1 and a2 fill it
    _, b = start(table, tmp_path, "b", job_targets.sleeper, 30, client="b", limits=small)
    assert wait_for(lambda: read(b))
    assert read(b) == ["stopped: the server is busy (2 background jobs running or waiting): try again in a minute"]
    job_table.kill(a1)
    _, c = start(table, tmp_path, "c", job_targets.sleeper, 30, client="c", limits=small)
    assert wait_for(lambda: read(c)) and not read(c)[0].startswith("stopped"), "a freed place is not given again"
    assert not gone(a2)


def test_a_waiting_job_hears_its_place_and_runs_when_a_slot_frees(table, tmp_path):
    one = replace(BASE, running=1, per_client=5)
    first, out1 = start(table, tmp_path, "first", job_targets.sleeper, 30, limits=one)
    assert wait_for(lambda: read(out1) == ["running"])
    _, out2 = start(table, tmp_path, "second", job_targets.sleeper, 0.1, limits=one)
    _, out3 = start(table, tmp_path, "third", job_targets.sleeper, 0.1, limits=one)
    assert wait_for(lambda: read(out3))
    assert read(out2) == ["wait: waiting for a free slot: you are next"]
    assert read(out3) == ["wait: waiting for a free slot: 1 job ahead of you"]
    job_table.kill(first)
    assert wait_for(lambda: read(out3)[-1:] == ["done"])
    assert read(out2)[1:] == ["running", "done"]  # first come, first served
    assert read(out3)[-3:] == ["wait: waiting for a free slot: you are next", "running", "done"]


def test_time_limits_end_a_running_and_a_waiting_job_with_a_message(table, tmp_path):
    short = replace(BASE, run_s=1, queue_s=1, running=1, per_client=5)
    runner, out1 = start(table, tmp_path, "runner", job_targets.sleeper, 30, limits=short)
    _, out2 = start(table, tmp_path, "waiter", job_targets.sleeper, 30, limits=short)
    assert wait_for(lambda: read(out1)[-1:] == ["stopped: took longer than 1 s"], 5)
    assert wait_for(lambda: read(out2)[-1].startswith("stopped"), 2)
    assert read(out2)[-1] == "stopped: waited 1 s for a free slot (the server is busy): try again in a minute"
    assert wait_for(lambda: gone(runner), 2)


def test_a_job_whose_own_limits_fail_is_ended_by_the_reaper_from_outside(table, tmp_path):
    limits = replace(BASE, run_s=1)
    pid, out = start(table, tmp_path, "stubborn", job_targets.stubborn, limits=limits)
    assert wait_for(lambda: read(out) == ["running"])
    started = time.monotonic()
    assert wait_for(lambda: gone(pid), 1 + 2 + 2 * job_runner.REAP_EVERY_S + 1), "the stuck job outlived its limit"
    assert time.monotonic() - started > 0.5  # not before its limit


def test_an_abandoned_job_ends_soon_after_its_page_stops_polling(table, tmp_path):
    limits = replace(BASE, abandoned_s=1)
    pid, out = start(table, tmp_path, "abandoned", job_targets.sleeper, 30, limits=limits)
    assert wait_for(lambda: read(out) == ["running"])
    for _ in range(6):  # polled for 1.5 s: alive
        assert job_table.touch(pid)
        time.sleep(0.25)
    assert not gone(pid)
    assert wait_for(lambda: gone(pid), 1 + 1), "no poll for its abandoned_s, and still running"


def test_a_job_past_its_memory_bound_stops_with_a_message(table, tmp_path):
    small = replace(BASE, memory_bytes=256 * 2**20)
    _, out = start(table, tmp_path, "hog", job_targets.hog, 2.0, limits=small)
    assert wait_for(lambda: read(out))
    assert read(out) == ["stopped: needed more than 0.25 GiB of memory"]
    _, fine = start(table, tmp_path, "fine", job_targets.hog, 0.1, limits=small)
    assert wait_for(lambda: read(fine)) and read(fine) == [f"allocated {int(0.1 * 2**30) // 8 * 8}"]


def test_a_stop_right_after_the_start_finds_the_job(table, tmp_path):
    """Dash sends oldJob at once when a view changes: the job is in the table when start returns."""
    pid, _ = start(table, tmp_path, "quick", job_targets.sleeper, 30)
    assert job_table.record_of(pid) is not None
    jobs.manager().terminate_job(str(pid))
    assert gone(pid)
    assert not jobs.manager().job_running(str(pid))


def test_a_record_being_rewritten_is_never_unreadable(table):
    """A job rewrites its record when it takes a slot; a stop arriving then must still find it
    (seen in CI: the record read empty between a truncate and a write, and the stop missed the job)."""
    entry = job_table.Entry.enter("a", BASE, time.time())
    path = Path(os.environ[job_table.ENV_DIR]) / "table" / str(os.getpid())
    done, seen = threading.Event(), []

    def reader():
        while not done.is_set():
            seen.append(path.read_bytes())

    thread = threading.Thread(target=reader)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the reader runs between the writer's system calls
    thread.start()
    for i in range(200_000):  # until the reader has read often enough
        if len(seen) >= 300:
            break
        entry.record.running_at = None if i % 2 else time.time()
        job_table._publish(str(path), entry.record)
    done.set()
    thread.join()
    sys.setswitchinterval(interval)
    assert len(seen) >= 300
    assert all(json.loads(text)["pid"] == os.getpid() for text in seen)
    assert job_table.record_of(os.getpid()) is not None
    os.close(entry.fd)


def test_only_a_signed_handle_of_bounded_length_counts_as_a_poll(table, tmp_path, monkeypatch):
    from dash import _callback_signing as signing

    pid, out = start(table, tmp_path, "polled", job_targets.sleeper, 30)
    assert wait_for(lambda: read(out) == ["running"])
    heartbeat = Path(os.environ[job_table.ENV_DIR]) / "table" / f"{pid}.lock"
    os.utime(heartbeat, (1, 1))
    path = "/_dash-update-component"
    key = jobs.secret_key()
    end = signing.sign(key, signing.END_SCOPE, "page")
    for forged in (f"{pid}~{'0' * 64}", "9" * 8000 + "~x", str(pid)):
        jobs.on_request(path, {"job": forged, "endId": end})
    jobs.on_request(path, {"job": signing.sign(key, signing.job_scope("other"), str(pid)), "endId": end})
    assert os.stat(heartbeat).st_mtime == 1, "a forged, oversized or foreign handle kept the job alive"
    before = sorted(p.name for p in heartbeat.parent.iterdir())
    jobs.on_request(path, {"job": signing.sign(key, signing.job_scope("page"), "424242"), "endId": end})
    assert sorted(p.name for p in heartbeat.parent.iterdir()) == before, "a poll created a record"
    jobs.on_request(path, {"job": signing.sign(key, signing.job_scope("page"), str(pid)), "endId": end})
    assert os.stat(heartbeat).st_mtime > time.time() - 5


def test_the_jobs_folder_is_private(tmp_path, monkeypatch):
    fresh = tmp_path / "fresh"
    monkeypatch.setenv(job_table.ENV_DIR, str(fresh))
    job_table.private_dir()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    monkeypatch.setenv(job_table.ENV_DIR, str(shared))
    with pytest.raises(RuntimeError, match="open to other users"):
        job_table.private_dir()
    link = tmp_path / "link"
    link.symlink_to(fresh)
    monkeypatch.setenv(job_table.ENV_DIR, str(link))
    with pytest.raises(RuntimeError, match="symbolic link"):
        job_table.private_dir()


def test_without_a_folder_set_each_server_makes_its_own(tmp_path):
    """No guessable shared name: a new mkdtemp folder, private, passed on to the server's children."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != job_table.ENV_DIR}
    code = (
        "import os, stat; from ppviz.web.common import job_table; p = job_table.private_dir(); "
        "print(p, oct(stat.S_IMODE(os.stat(p).st_mode)), os.environ['PPVIZ_JOBS_DIR'] == p)"
    )
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)]
    runs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True))
    (a, mode_a, shared_a), (b, _, _) = (r.stdout.split() for r in runs)
    assert a != b and mode_a == "0o700" and shared_a == "True"
    assert not os.path.exists(a) and not os.path.exists(b), "the folder outlived its server"


def test_the_page_shows_its_place_in_the_queue(tmp_path, monkeypatch):
    """Through Dash's dispatch: with one slot taken by another client, a heavy view's progress says
    it is next; when the slot frees, it runs."""
    from web_dispatch import Page

    monkeypatch.setenv("PPVIZ_JOBS_RUNNING", "1")
    heavy = {"hash": "#mode=compare&compare=v-auto,v-half,v-zb,zb-auto&devices=64&microbatches=256", "at": 1}
    other = Page.open(app.server)
    other.client.environ_base["REMOTE_ADDR"] = "10.0.0.9"
    other.set("job-request", "data", heavy)
    dep = other.callback("job-error.children")
    busy = other.post(other.body(dep, [("job-request", "data")])).get_json()
    busy_pid = int(busy["job"].split("~")[0])
    assert wait_for(lambda: (job_table.record_of(busy_pid) or job_table.Record(0, "", {}, 0, 0)).running_at)
    page = Page.open(app.server)
    page.set("job-request", "data", {**heavy, "at": 2})
    body = page.body(dep, [("job-request", "data")])
    mine = page.post(body).get_json()
    seen = []
    for _ in range(150):
        answer = page.post(body, cacheKey=mine["cacheKey"], job=mine["job"]).get_json() or {}
        seen.append(answer.get("progress", {}).get("job-status.children"))
        if seen[-1]:
            break
        time.sleep(0.1)
    assert seen[-1] == "v-auto and v-half and v-zb and zb-auto: waiting for a free slot: you are next"
    jobs.manager().terminate_job(str(busy_pid))
    for _ in range(150):
        answer = page.post(body, cacheKey=mine["cacheKey"], job=mine["job"]).get_json() or {}
        status = answer.get("progress", {}).get("job-status.children")
        if status and "simulating" in status:
            break
        time.sleep(0.1)
    assert "searching and simulating" in status
    jobs.manager().terminate_job(mine["job"].split("~")[0])


def test_a_forked_worker_leaving_does_not_remove_the_servers_folder(tmp_path):
    """gunicorn's workers are forks of the process that made the folder and run its atexit hooks when
    they exit (a worker recycled after max_requests): the folder must outlive them, and not its maker."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != job_table.ENV_DIR}
    code = (
        "import os, sys; from ppviz.web.common import job_table; p = job_table.private_dir(); "
        "pid = os.fork()\n"
        "if pid == 0:\n    sys.exit(0)  # the worker's exit: atexit hooks run here\n"
        "os.waitpid(pid, 0); print(p, os.path.isdir(os.path.join(p, 'table')))"
    )
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    path, kept = run.stdout.split()
    assert kept == "True", "a worker's exit removed the server's jobs folder"
    assert not os.path.exists(path), "the folder outlived its server"
