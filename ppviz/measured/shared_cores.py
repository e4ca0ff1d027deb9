"""Ranks that time-share a host's cores: a CPU run with more ranks than cores.

On GPUs each rank has a device of its own. A CPU run of a pipeline (torch's pipelining on gloo, on
a laptop or a small VM) often has more ranks than the host has cores. While k ranks compute on
C < k cores, each computes at C/k of its speed: the OS shares the cores among the runnable threads
(processor sharing). The measured op times then hold that slowdown, which depends on how many ranks
computed at once, so one time per stage and kind cannot hold it.

Given the cores, the fit takes each op's own work back out: its duration × its mean share of a core,
min(1, C/k) over its span, with k counted from the measured ops. The simulation runs the same order
with the ops sharing the cores, the host overhead and the waits for data taking none. With a core per
rank (C ≥ ranks) both are the plain fit and the linear simulation.
"""

from __future__ import annotations

import numpy as np

from .. import api
from ..errors import InputError
from ..ir import Kind
from ..metrics import compute
from ..simulator import Result, dependencies
from .run import MeasuredRun

MAX_CORES = 4096
_DONE_S = 1e-12  # work left below this (s × share) is done: float rounding of the rate steps


def check_cores(cores: object) -> int:
    if isinstance(cores, bool) or not isinstance(cores, int) or not 1 <= cores <= MAX_CORES:
        raise InputError(f"cores must be a whole number from 1 to {MAX_CORES:,} (got {cores!r})", field="cores")
    return cores


def uncontended(run: MeasuredRun, cores: int) -> dict[tuple[int, Kind], list[float]]:
    """Per (stage, kind), each op's duration × its mean share of a core over its span."""
    spans = [(op.start, op.end) for row in run.ops for op in row]
    edges = np.unique(np.array(spans, dtype=float).ravel())
    mids = (edges[:-1] + edges[1:]) / 2
    computing = np.zeros(len(mids))
    for start, end in spans:
        lo, hi = np.searchsorted(edges, [start, end])
        computing[lo:hi] += 1
    share_s = np.concatenate([[0.0], np.cumsum(np.minimum(1.0, cores / np.maximum(computing, 1)) * np.diff(edges))])
    out: dict[tuple[int, Kind], list[float]] = {}
    for row in run.ops:
        for op in row:
            lo, hi = np.searchsorted(edges, [op.start, op.end])
            out.setdefault((op.stage, op.kind), []).append(float(share_s[hi] - share_s[lo]))
    return out


def simulate(linear: api.Run, cores: int) -> api.Run:
    """``linear``'s order and costs with its devices time-sharing ``cores`` cores: an op computes at
    min(1, cores / computing ops), its device's host overhead after it and a cross-device input's p2p
    latency take no core."""
    r = linear.result
    costs = linear.costs
    if r.paired.any():
        raise InputError("time-shared cores are simulated for orders without overlapped pairs", field="cores")
    work = (r.end - r.start).tolist()  # each op alone on a core
    producer = dependencies(r).tolist()
    device = r.device.tolist()
    gap = list(costs.host_overhead) or [0.0] * linear.schedule.devices
    rows = [np.flatnonzero(r.device == d).tolist() for d in range(linear.schedule.devices)]
    start, end = _timed(rows, work, producer, device, gap, float(costs.p2p), cores)
    timed = Result(linear.schedule, costs, r.device, r.stage, r.microbatch, r.kind, None, start, end, r.device,
                   start, end)  # fmt: skip
    return api.Run(timed, compute(timed))


def _timed(rows, work, producer, device, gap, p2p, cores):
    """Processor sharing, event by event: the next event is an op's end, a host overhead's end or an
    input's arrival; between two events the computing ops share the cores evenly."""
    n = len(work)
    start, end = np.full(n, np.nan), np.full(n, np.nan)
    pos = [0] * len(rows)
    free = [0.0] * len(rows)  # when the device's host is done with its overhead
    left: dict[int, float] = {}  # computing op -> work left (s of a whole core)
    t = 0.0
    while True:
        for d, row in enumerate(rows):
            if pos[d] < len(row) and row[pos[d]] not in left and free[d] <= t:
                a = row[pos[d]]
                ready = _arrival(a, producer, device, end, p2p)
                if ready is not None and ready <= t:
                    start[a], left[a] = t, work[a]
        if not left and all(p == len(row) for p, row in zip(pos, rows)):
            return start, end
        rate = min(1.0, cores / len(left)) if left else 1.0
        nxt = [t + w / rate for w in left.values()]
        for d, row in enumerate(rows):
            if pos[d] < len(row) and row[pos[d]] not in left:
                ready = _arrival(row[pos[d]], producer, device, end, p2p)
                if ready is not None:
                    nxt.append(max(ready, free[d]))
        if not nxt:
            raise InputError("the order cannot finish: an op waits for one that never runs", field="files")
        step = min(nxt) - t
        t += step
        for a in list(left):
            left[a] -= step * rate
            if left[a] <= _DONE_S:
                del left[a]
                d = device[a]
                end[a] = t
                pos[d] += 1
                free[d] = t + (gap[d] if pos[d] < len(rows[d]) else 0.0)


def _arrival(a: int, producer: list[int], device: list[int], end: np.ndarray, p2p: float) -> float | None:
    """When op ``a``'s input is there (0.0 without one), None while its producer has not ended."""
    j = producer[a]
    if j < 0:
        return 0.0
    if np.isnan(end[j]):
        return None
    return float(end[j]) + (p2p if device[j] != device[a] else 0.0)
