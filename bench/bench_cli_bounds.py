"""The command line's refusals (issue #18, part 7): each probe that once hung or took GBs, run as a
process, with its exit status, wall and CPU seconds and peak memory. Target: exit 2 within 1 s.
Most of a refusal's time is Python starting and importing ppviz; the CPU column is what the
process used, the wall column grows with the machine's load (printed first).
``--rss`` also runs the largest searches the bounds accept and prints their peak memory (minutes).

    nice .venv/bin/python bench/bench_cli_bounds.py [--rss]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

M = ["--model", "llama3-8b", "--gpu", "h100-sxm"]
PROBES = [
    ["estimate", *M, "--layers", "1000000000"],
    ["search", *M, "--gpus", "1099511627776", "--gbs", "64"],
    ["search", *M, "--gpus", "64", "--gbs", "512", "--layers", "1000000000"],
    ["search", *M, "--gpus", "16384", "--gbs", "1048576", "--seq", "100000000"],
    ["search", *M, "--gpus", "16384", "--gbs", "1048576", "--layers", "1024"],
    ["search", *M, "--gpus", "64", "--gbs", "64", "--jobs", "100000"],
    ["search", *M, "--gpus", "0", "--gbs", "64"],
    ["estimate", *M, "--kernel-overhead-us", "-1e308"],
    ["simulate", "1f1b", "-p", "1000000", "-m", "1000000"],
]
# searches the bounds accept whose memory grows most: every order built (llama3-8b, 48M counted), and
# large counts that prune (SEARCH_ACTIONS is 500M; the README's GPT 1T example counts 168M)
ACCEPTED = [
    ["search", "--model", "megatron-1t", "--gpu", "h200", "--gpus", "2048", "--gbs", "4096", "--nvlink-domain", "4"],
    ["search", *M, "--gpus", "64", "--gbs", "512", "--layers", "1024"],
    ["search", "--model", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "16384", "--gbs", "16384"],
    ["search", "--model", "llama3-405b", "--gpu", "h100-sxm", "--gpus", "16384", "--gbs", "2048"],
]


def run(args: list[str], timeout: float) -> tuple[int, float, float, float, str]:
    """Exit status, wall s, CPU s, peak RSS MB of ``python -m ppviz args``, and its first stderr line."""
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "ppviz", *args], stdout=subprocess.DEVNULL, stderr=err, text=True)
        timer = threading.Timer(timeout, p.kill)  # bounded: a probe that hangs is ended (its exit shows -9)
        timer.start()
        _, status, use = os.wait4(p.pid, 0)
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        err.seek(0)
        first = (err.read().strip().splitlines() or [""])[0]
    return p.returncode, wall, use.ru_utime + use.ru_stime, use.ru_maxrss / 1024, first


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rss", action="store_true", help="also run the largest accepted searches (minutes)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, {os.cpu_count()} cores")
    print(f"{'exit':>4} {'wall s':>7} {'CPU s':>6} {'peak MB':>8}  probe -> message")
    for probe in PROBES:
        code, wall, cpu, rss, err = run(probe, 60)
        print(f"{code:>4} {wall:>7.2f} {cpu:>6.2f} {rss:>8.0f}  {' '.join(probe[:1] + probe[5:])} -> {err[:110]}")
    if args.rss:
        print(f"{'exit':>4} {'wall s':>7} {'CPU s':>6} {'peak MB':>8}  accepted search")
        for probe in ACCEPTED:
            code, wall, cpu, rss, _ = run(probe, 1800)
            print(f"{code:>4} {wall:>7.1f} {cpu:>6.1f} {rss:>8.0f}  {' '.join(probe)}")
    print(f"load average {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
