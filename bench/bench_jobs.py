"""Bursts of background jobs against the page as served (gunicorn, shipped config, loopback).

    python bench/bench_jobs.py                          # 5 bursts of 20 heavy views, a second apart
    python bench/bench_jobs.py --bursts 10 --run-s 5    # longer, with a longer run limit

Each job compares four searching schedules at 64 × 256 (about 4 s of CPU), nobody polls, and the limits are short, so
every job either runs (``PPVIZ_JOBS_RUNNING`` slots) or waits, and must end by its limit. Prints how
fast a job starts (the request that creates it), how long jobs lived against their limit, the most
memory one took, how many outlived their limit, and what was left under the job servers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

HEAVY = "#mode=compare&compare=v-auto,v-half,v-zb,zb-auto&devices=64&microbatches=256"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bursts", type=int, default=5)
    ap.add_argument("--size", type=int, default=20)
    ap.add_argument("--gap-s", type=float, default=1.0)
    ap.add_argument("--run-s", type=float, default=2.0)
    ap.add_argument("--queue-s", type=float, default=3.0)
    ap.add_argument("--running", type=int, default=2)
    args = ap.parse_args()
    os.environ.update(
        PPVIZ_JOB_MAX_S=str(args.run_s), PPVIZ_JOB_QUEUE_S=str(args.queue_s), PPVIZ_JOB_ABANDONED_S="600",
        PPVIZ_JOBS_RUNNING=str(args.running), PPVIZ_JOBS_QUEUED="100000", PPVIZ_JOBS_PER_CLIENT="100000",
    )  # fmt: skip
    import psutil
    from bench_load import Server, page_template
    from job_targets import jobs_under

    page, _ = page_template()
    dep = page.callback("job-error.children")
    server = Server()
    limit = args.run_s + args.queue_s
    started: dict[int, float] = {}
    latencies: list[float] = []
    peak_rss = [0.0]
    done = threading.Event()

    def post(i: int) -> None:
        page.set("job-request", "data", {"hash": HEAVY, "at": i})
        body = json.dumps(page.body(dep, [("job-request", "data")])).encode()
        url = f"http://127.0.0.1:{server.port}/_dash-update-component?endId={page.end_id}"
        t0, sent = time.perf_counter(), time.time()
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as r:
            pid = int(json.loads(r.read())["job"].split("~")[0])
        latencies.append(time.perf_counter() - t0)
        try:
            started[pid] = psutil.Process(pid).create_time()  # a lifetime counts from the process's start
        except psutil.NoSuchProcess:
            started[pid] = sent  # already gone: from the request, an upper bound

    def jobs() -> list:
        return jobs_under(server.proc.pid)

    lifetimes: dict[int, float] = {}

    def sample() -> None:
        """Every 50 ms: the jobs that ended since (their lifetime), and the most memory one holds."""
        while not done.is_set():
            for pid, t0 in list(started.items()):
                if pid not in lifetimes and (t := ended(pid)) is not None:
                    lifetimes[pid] = t - t0
            for proc in jobs():
                with contextlib.suppress(psutil.Error):
                    peak_rss[0] = max(peak_rss[0], proc.memory_info().rss / 2**20)
            time.sleep(0.05)

    def ended(pid: int) -> float | None:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return None
        except psutil.NoSuchProcess:
            pass
        return time.time()

    threading.Thread(target=sample, daemon=True).start()
    try:
        with ThreadPoolExecutor(args.size) as pool:
            for burst in range(args.bursts):
                list(pool.map(post, range(burst * args.size, (burst + 1) * args.size)))
                time.sleep(args.gap_s)
        deadline = time.monotonic() + limit + 30
        while len(lifetimes) < len(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = jobs()
    finally:
        done.set()
        server.stop()
    over = [t for t in lifetimes.values() if t > limit + 3]
    hung = len(started) - len(lifetimes)
    lat = sorted(latencies)
    print(f"load average {os.getloadavg()[0]:.1f}; {len(started)} jobs in {args.bursts} bursts of {args.size}")
    print(
        f"start request: p50 {statistics.median(lat) * 1e3:.0f} ms, p99 {lat[int(0.99 * (len(lat) - 1))] * 1e3:.0f} ms"
    )
    print(f"lifetime: max {max(lifetimes.values(), default=0):.1f} s against a limit of {limit:g} s (+3 s grace)")
    print(f"jobs past their limit: {len(over)}; never ended: {hung}; processes left: {len(left)}")
    print(f"most memory one job took: {peak_rss[0]:.0f} MB RSS")


if __name__ == "__main__":
    main()
