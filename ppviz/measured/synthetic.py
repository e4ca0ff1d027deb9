"""A simulated run written as PyTorch profiler traces, one per rank, in Kineto's shape.

The round trip (simulate → these traces → import → fit) checks the reader and the fit on times
known exactly; the import benchmark pads one with operator events to the size of a real trace.
"""

from __future__ import annotations

from ..api import Run
from ..ir import KINDS, Action
from ..simulator import dependencies

BASE_NS = 1_790_000_000_000_000_000  # a Unix time in ns, as Kineto writes it
STEP_MARGIN_US = 10.0


def rank_traces(run: Run, *, us_per_unit: float = 1000.0, step: int = 1, origin_us: float = 1e6) -> list[dict]:
    """Per rank, a trace dict: its ops as ``PP:<action>`` annotations inside ``ProfilerStep#<step>``,
    a ``gloo:send`` from each op's end whose output another rank needs until the op that needs it starts
    (gloo's: a send completes when received), and a ``gloo:recv`` on that rank over the same span
    (a receive ends when waited on and arrived).
    ``us_per_unit``: µs per ppviz time unit."""
    r = run.result
    ranks = run.schedule.devices
    start = r.start * us_per_unit + origin_us
    end = r.end * us_per_unit + origin_us
    events: list[list[dict]] = [[] for _ in range(ranks)]
    dev = r.device.tolist()
    for i, (s, m, k) in enumerate(zip(r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist())):
        events[dev[i]].append(_span(f"PP:{Action(s, m, KINDS[k])}", start[i], end[i], dev[i]))
    for i, j in enumerate(dependencies(r).tolist()):
        if j >= 0 and dev[j] != dev[i]:
            events[dev[j]].append(_span("gloo:send", end[j], start[i], dev[j]))
            events[dev[i]].append(_span("gloo:recv", end[j], start[i], dev[i]))
    lo, hi = float(start.min()) - STEP_MARGIN_US, float(end.max()) + STEP_MARGIN_US
    out = []
    for d in range(ranks):
        evs = [_span(f"ProfilerStep#{step}", lo, hi, d), *sorted(events[d], key=lambda e: e["ts"])]
        out.append({"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": d, "world_size": ranks},
                    "baseTimeNanoseconds": BASE_NS, "traceEvents": evs, "displayTimeUnit": "ms"})  # fmt: skip
    return out


def _span(name: str, start: float, end: float, rank: int) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": rank, "tid": rank, "ts": float(start),
            "dur": float(end) - float(start), "args": {}}  # fmt: skip
