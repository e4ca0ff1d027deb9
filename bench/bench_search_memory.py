"""Peak memory and time of the search view's job for given inputs, each search in a fresh process.

    python bench/bench_search_memory.py                      # the worst search the page accepts, and a few others
    python bench/bench_search_memory.py "#gpus=4096&gbs=4096"   # one link (bounded as the page does)

Each search runs as the page's background job runs it (``search_render.run`` with the job's
deadline) in a child process; prints the child's peak RSS (``ru_maxrss``), its CPU and wall
seconds, the layouts in the space and the rows it returned. A child is killed past ``--timeout``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ALL = "1f1b,interleaved-1f1b,zb-h1,zb-v,zb-h2,v-half,v-min,v-zb,dualpipe-v,zb-auto"
LINKS = [
    # the default search; the (refused); the largest spaces the page accepts (search_state.MAX_GROUPS)
    "#gpus=512&gbs=512",
    f"#gpus=16384&gbs=1048576&seq=1048576&model=deepseek-v3&schedules={ALL}&tp_mode=1d,2d&top=100",
    f"#gpus=2048&gbs=2048&model=deepseek-v3&schedules={ALL}&tp_mode=1d,2d&top=100",
    f"#gpus=4096&gbs=4096&seq=4096&model=deepseek-v3&schedules={ALL}&tp_mode=1d,2d&top=100",
    f"#gpus=16384&gbs=16384&seq=131072&model=llama3-405b&schedules={ALL}&tp_mode=1d,2d&top=100",
    f"#gpus=8192&gbs=65536&model=llama3-405b&schedules={ALL}&tp_mode=1d,2d&top=100",
]


def child(link: str, deadline_s: float) -> None:
    from ppviz.web.pages.search import render as search_render
    from ppviz.web.pages.search import state as search_state

    state, notes, _ = search_state.parse(link)
    out = {"notes": notes}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        out["groups"] = search_render.groups(state)
        result = search_render.run(state, deadline_s=deadline_s)
        out |= {"space": result.searched, "simulated": result.simulated, "rows": len(result.layouts)}
        out["cancelled"] = result.cancelled
    except ValueError as e:
        out["refused"] = str(e)
    out |= {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0}
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def measure(link: str, deadline_s: float, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--child", link, "--deadline", str(deadline_s)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"killed": f"past {timeout:g} s"}
    return json.loads(out) if proc.returncode == 0 else {"failed": proc.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("links", nargs="*", help="search-view links (default: a few, the worst accepted first)")
    ap.add_argument("--deadline", type=float, default=85.0, help="the search's own deadline (the page's: 85 s)")
    ap.add_argument("--timeout", type=float, default=120.0, help="kill a child after this many seconds")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.deadline)
        return
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    for link in args.links or LINKS:
        r = measure(link, args.deadline, args.timeout)
        print(link)
        print("   ", json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
