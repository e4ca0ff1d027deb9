"""Load on the page as served: gunicorn with the shipped gunicorn.conf.py, on loopback.

    python bench/bench_load.py                    # 50 users for 60 s, 1–3 s think time
    python bench/bench_load.py --users 100 --seconds 30
    python bench/bench_load.py --proxy            # the same through nginx, as the container serves
    python bench/bench_load.py --cpu              # one user, back to back: server CPU per 8×32 release
    python bench/bench_load.py --rss 5000         # RSS of the workers over 5,000 mixed renders
    python bench/bench_load.py --factors [v-half ...]  # each schedule's worst views drawn cold (limits.py)
    python bench/bench_load.py --slow 8           # a cheap GET's latency while 8 clients trickle a body,
                                                  # gunicorn alone and behind nginx (deploy/serve.py)

Each simulated user sends what a browser sends on a slider release at 8 devices × 32 microbatches:
the page callback's real request (built from the app's callback map), gzip accepted, with the
query string of its own previous answer. Prints latency percentiles, errors, requests/s and the
server's CPU per request (utime + stime of the gunicorn processes from /proc/<pid>/stat).
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = "gantt.figure...memory.figure"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """gunicorn app:server -c gunicorn.conf.py on a free loopback port, or with ``proxy`` the
    container's command (nginx in front of gunicorn, deploy/serve.py); stopped by its PID."""

    def __init__(self, proxy: bool = False):
        self.port = free_port()
        gunicorn = Path(sys.executable).with_name("gunicorn")
        cmd = [str(gunicorn), "app:server", "-c", "gunicorn.conf.py", "-b", f"127.0.0.1:{self.port}"]
        env = {**os.environ, "WEB_CONCURRENCY": os.environ.get("WEB_CONCURRENCY", "2")}
        if proxy:
            cmd = [sys.executable, "deploy/serve.py"]
            env.update(HOST="127.0.0.1", PORT=str(self.port))
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/_dash-layout")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("gunicorn did not start")

    def pids(self) -> list[int]:
        """The master and every process under it (workers, background jobs)."""
        out, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            try:
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            todo += [int(c) for c in children]
        return out

    def cpu_s(self) -> float:
        """utime + stime of the server's processes, and of their waited-for children."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        return total / TICKS

    def rss_mb(self) -> list[float]:
        out = []
        for pid in self.pids()[1:]:
            try:
                rss = Path(f"/proc/{pid}/statm").read_text().split()[1]
            except OSError:
                continue
            out.append(int(rss) * os.sysconf("SC_PAGE_SIZE") / 2**20)
        return out

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def page_template():
    """The page callback's request for a slider release, from the app's own callback map."""
    from web_dispatch import Page

    import app

    page = Page.open(app.server)
    page.load()
    dep = page.callback(PAGE)
    return page, dep


class User:
    """One browser tab: a keep-alive connection and the page's current hash."""

    def __init__(self, port: int, page, dep, seed: int):
        self.port, self.page, self.dep = port, page, dep
        self.rng = random.Random(seed)
        self.search = "#schedule=1f1b&devices=8&microbatches=32"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def release(self, name: str, value) -> tuple[float, int]:
        values = {("url", "hash"): self.search, (name, "value"): value}
        from ppviz.web.pages.abstract.state import parse

        state = parse(self.search).state
        for control in ("devices", "microbatches", "f", "b", "w", "p2p"):
            if control != name:
                values[(control, "value")] = getattr(state, control)
        body = json.dumps(self.page.body(self.dep, [(name, "value")], values)).encode()
        headers = {"Content-Type": "application/json", "Accept-Encoding": "gzip"}
        started = time.perf_counter()
        try:
            self.conn.request("POST", f"/_dash-update-component?endId={self.page.end_id}", body, headers)
            response = self.conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            return time.perf_counter() - started, 599
        elapsed = time.perf_counter() - started
        if response.status == 200:
            if response.getheader("Content-Encoding") == "gzip":
                data = gzip.decompress(data)
            answer = json.loads(data).get("response", {})
            self.search = answer.get("url", {}).get("hash") or self.search
        return elapsed, response.status

    def slider_release(self) -> tuple[float, int]:
        """A random slider moved one step around 8 × 32."""
        name = self.rng.choice(["devices", "microbatches", "f", "b", "w", "p2p"])
        value = {
            "devices": self.rng.choice([7, 8, 9]),
            "microbatches": self.rng.choice([30, 31, 32, 33, 34]),
            "f": self.rng.choice([0.9, 1.0, 1.1]),
            "b": self.rng.choice([0.9, 1.0, 1.1, 1.2]),
            "w": self.rng.choice([0.8, 0.9, 1.0]),
            "p2p": self.rng.choice([0.0, 0.05, 0.1]),
        }[name]
        return self.release(name, value)


def load(users: int, seconds: float, think: tuple[float, float], proxy: bool = False) -> None:
    page, dep = page_template()
    server = Server(proxy)
    try:
        warm = User(server.port, page, dep, -1)
        for _ in range(20):
            warm.slider_release()
        latencies: list[float] = []
        errors = [0]
        lock = threading.Lock()
        stop_at = time.monotonic() + seconds

        def run(i: int) -> None:
            user = User(server.port, page, dep, i)
            time.sleep(user.rng.uniform(0, think[1]))
            while time.monotonic() < stop_at:
                elapsed, status = user.slider_release()
                with lock:
                    latencies.append(elapsed)
                    errors[0] += status != 200
                time.sleep(user.rng.uniform(*think))

        cpu0, t0 = server.cpu_s(), time.monotonic()
        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(users)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + 60)
        wall, cpu = time.monotonic() - t0, server.cpu_s() - cpu0
        q = statistics.quantiles(latencies, n=100)
        via = " through nginx" if proxy else ""
        print(f"{users} users × {seconds:g} s{via}, think {think[0]:g}–{think[1]:g} s, 8 × 32 slider releases")
        print(f"requests {len(latencies)}, errors {errors[0]}, {len(latencies) / wall:.1f} requests/s")
        print(f"latency p50 {q[49] * 1e3:.0f} ms, p95 {q[94] * 1e3:.0f} ms, p99 {q[98] * 1e3:.0f} ms")
        print(f"server CPU {cpu * 1e3 / max(len(latencies), 1):.1f} ms per request (over {wall:.0f} s)")
    finally:
        server.stop()


def cpu_per_release(n: int) -> None:
    page, dep = page_template()
    server = Server()
    try:
        user = User(server.port, page, dep, 0)
        for _ in range(30):
            user.slider_release()
        cpu0 = server.cpu_s()
        times = [user.slider_release()[0] for _ in range(n)]
        cpu = server.cpu_s() - cpu0
        print(f"{n} 8 × 32 slider releases back to back: server CPU {cpu * 1e3 / n:.1f} ms each, ", end="")
        print(f"latency median {statistics.median(times) * 1e3:.1f} ms")
    finally:
        server.stop()


MIXED = [
    ("1f1b", 8, 32),
    ("zb-h1", 16, 64),
    ("interleaved-1f1b", 32, 128),
    ("zb-v", 8, 256),
    ("1f1b", 64, 512),
    ("dualpipe", 16, 128),
    ("v-half", 8, 32),
    ("gpipe", 4, 8),
    ("interleaved-zb", 16, 256),
    ("looped-bfs", 32, 256),
]


def rss(renders: int) -> None:
    """RSS of the workers while a user keeps opening different views (each a new run: the cache fills)."""
    page, dep = page_template()
    server = Server()
    try:
        user = User(server.port, page, dep, 0)
        rng = random.Random(1)
        print(f"{'renders':>8} {'worker RSS (MB)':>20}")
        print(f"{0:>8} {' / '.join(f'{r:.0f}' for r in server.rss_mb()):>20}")
        for i in range(1, renders + 1):
            name, p, m = rng.choice(MIXED)
            user.search = f"#schedule={name}&devices={p}&microbatches={m}&f={rng.choice([0.5, 1, 1.5, 2])}"
            user.release("b", rng.choice([0.5, 0.75, 1.0, 1.25, 1.5, 2.0]))
            if i % (renders // 10) == 0:
                print(f"{i:>8} {' / '.join(f'{r:.0f}' for r in server.rss_mb()):>20}", flush=True)
    finally:
        server.stop()


UNIT_S = 2.5e-6  # CPU seconds of one work unit (ppviz.web.common.limits)
SLOW_S = 0.4  # a view that takes more must be priced past SYNC_WORK (0.5 s of CPU: margin for a loaded machine)
REPEAT = 2  # fresh processes per view, the least CPU kept (a busy neighbour can double a process's CPU time)
GRID_P = [2, 4, 8, 12, 16, 20, 24, 32, 48, 64]
GRID_M = [1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
SEARCH_ACTIONS = 20_000  # searching schedules are swept up to this many actions (past SYNC_WORK at factor 10)


def cold(view: str, link: str) -> dict:
    """One view drawn in a fresh process (bench/cold_render.py): every cache starts empty."""
    from cold_render import in_fresh_process

    return in_fresh_process(view, link)


def shapes_of(name: str) -> list[str]:
    """The views measured (links): a searching schedule's grid up to SEARCH_ACTIONS actions, and for
    every schedule its largest synchronous view (overall and at some numbers of devices)."""
    from cold_render import largest_sync

    from ppviz.web.common import limits
    from ppviz.web.pages.abstract import budget
    from ppviz.web.pages.abstract.state import ViewState

    searching = limits.factor(name) > 1
    out = []
    for p in GRID_P if searching else ():
        for m in GRID_M:
            if budget.actions(ViewState(schedule=name, devices=p, microbatches=m), name) <= SEARCH_ACTIONS:
                out.append(f"#schedule={name}&devices={p}&microbatches={m}")
    for devices in [None, *([[p] for p in GRID_P] if searching else [[8], [64]])]:
        found = largest_sync(name, devices)
        if found is not None and found[0] not in out:
            out.append(found[0])
    return out


def factors(names: list[str]) -> None:
    """Every schedule drawn cold at its worst views: CPU seconds, units, and the factor it needs."""
    from ppviz import REGISTRY
    from ppviz.web.common import limits
    from ppviz.web.pages.abstract import budget
    from ppviz.web.pages.abstract import state as url_state

    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(f"{'schedule':>24} {'view':>12} {'actions':>8} {'units':>9} {'sync':>5} {'CPU s':>7} {'µs/action':>10}")
    summary = []
    for name in names or list(REGISTRY):
        rows = []
        for link in shapes_of(name):
            r = min((cold("abstract", link) for _ in range(REPEAT)), key=lambda r: r.get("cpu_s", 0))
            state, _ = url_state.bounded(url_state.parse(link).state)
            size = "×".join(str(v) for v in (state.devices, state.microbatches, *state.params.get(name, {}).values()))
            if "error" in r:
                print(f"{name:>24} {size:>12} failed: {r['error']}", flush=True)
                continue
            n = budget.actions(state, name)
            rows.append((state.devices, state.microbatches, n, r["units"], r["sync"], r["cpu_s"], size))
            print(
                f"{name:>24} {size:>12} {n:>8} {r['units']:>9} {str(r['sync']):>5} {r['cpu_s']:>7.3f} "
                f"{r['cpu_s'] / n * 1e6:>10.1f}",
                flush=True,
            )
        if rows:
            summary.append((name, rows))
    head = f"{'worst sync view':>15} {'units':>9} {'CPU s':>7} {'factor':>7} {'needs':>6} {'slope':>6}"
    print(f"\n{'schedule':>24} {head}")
    for name, rows in summary:
        *_, units, _, cpu, size = max((r for r in rows if r[4]), key=lambda r: r[5], default=rows[0])
        terms = {r: limits.price(name, r[0], r[1], r[2]) - r[2] * limits.factor(name) for r in rows}  # the search's
        # the least factor that prices every view slower than SLOW_S past SYNC_WORK, with the same terms
        needs = max([int((limits.SYNC_WORK - terms[r]) / r[2]) + 1 for r in rows if r[5] > SLOW_S], default=1)
        # CPU per action in units at the largest views measured (what the background budget needs)
        slope = max(r[5] / UNIT_S / r[2] for r in sorted(rows, key=lambda r: r[2])[-3:])
        print(f"{name:>24} {size:>15} {units:>9} {cpu:>7.3f} {limits.factor(name):>7} {max(needs, 1):>6} {slope:>6.1f}")
    print(
        f"\nworst sync: the slowest view priced ≤ {limits.SYNC_WORK:,} units (must stay under 0.5 s of CPU); "
        f"needs: the least factor pricing every view over {SLOW_S} s past that; slope: units per action at the "
        f"largest views measured (a factor below it under-prices background jobs). CPU: the least of {REPEAT} runs."
    )


def slow(n: int, seconds: float, every: float, setups: list[str]) -> None:
    """A cheap GET (/_dash-layout) every 0.5 s while ``n`` connections trickle a POST body a byte at a time."""
    from slow_clients import Tricklers, get, serve

    print(
        f"{n} clients trickling a POST body, a byte every {every:g} s; GET /_dash-layout every 0.5 s for {seconds:g} s"
    )
    print(f"{'served by':>18} {'GETs':>5} {'p50':>8} {'max':>8} {'> 1 s':>6} {'failed':>7} {'trickling at end':>17}")
    for setup in setups:
        served = serve(proxy=setup == "nginx+gunicorn")
        try:
            tricklers = Tricklers(served.port, n, "body", every)
            times, failed, stop_at = [], 0, time.monotonic() + seconds
            time.sleep(1)
            while time.monotonic() < stop_at:
                status, elapsed = get(served.port, timeout=max(stop_at - time.monotonic(), 1))
                times.append(elapsed)
                failed += status != 200
                time.sleep(0.5)
            waiting = tricklers.waiting()
            tricklers.close()
        finally:
            served.stop()
        p50, worst, slow_n = statistics.median(times), max(times), sum(t > 1 for t in times)
        print(f"{setup:>18} {len(times):>5} {p50 * 1e3:>6.0f} ms {worst:>6.2f} s {slow_n:>6} {failed:>7} {waiting:>17}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--seconds", type=float, help="how long the load (60 s) or --slow (30 s) runs")
    ap.add_argument("--think", type=float, nargs=2, default=(1.0, 3.0))
    ap.add_argument("--cpu", action="store_true", help="server CPU per 8×32 slider release, one user")
    ap.add_argument("--rss", type=int, metavar="RENDERS", help="worker RSS over this many mixed renders")
    ap.add_argument("--factors", nargs="*", metavar="SCHEDULE", help="every (or these) schedules' worst views, cold")
    ap.add_argument("--proxy", action="store_true", help="load the container's command: nginx in front of gunicorn")
    ap.add_argument("--slow", type=int, metavar="N", help="a cheap GET's latency while N clients trickle a body")
    ap.add_argument("--every", type=float, default=1.0, help="with --slow: seconds between a trickler's bytes")
    ap.add_argument(
        "--setups", nargs="+", default=["gunicorn", "nginx+gunicorn"], choices=["gunicorn", "nginx+gunicorn"]
    )
    args = ap.parse_args()
    if args.slow:
        slow(args.slow, args.seconds or 30, args.every, args.setups)
    elif args.factors is not None:
        factors(args.factors)
    elif args.cpu:
        cpu_per_release(300)
    elif args.rss:
        rss(args.rss)
    else:
        load(args.users, args.seconds or 60, tuple(args.think), args.proxy)


if __name__ == "__main__":
    main()
