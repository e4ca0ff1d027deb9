"""Exports and imports of a run: ops CSV, the CLI's JSON, Chrome trace, PyTorch order CSV.

Pure text in, text out, built on ``Run`` and the IR: no plotly, no dash, no files. Exports carry
the simulator's exact float64 times.
"""

from __future__ import annotations

import json

import numpy as np

from . import ir
from .api import Run
from .ir import KINDS, Overlap, Schedule
from .simulator import validate

OPS_HEADER = "device,stage,microbatch,kind,start,end"
TRACE_US_PER_UNIT = 1000.0  # Chrome trace times are microseconds; one time unit is shown as 1 ms
UPLOAD_LIMIT = 1_000_000  # bytes


def ops_csv(run: Run) -> str:
    """One row per op (an overlapped pair gives two rows with the same start and end)."""
    rows = [OPS_HEADER]
    rows += [f"{d},{s},{m},{k},{a!r},{b!r}" for d, s, m, k, a, b in run.result.rows()]
    return "\n".join(rows) + "\n"


def run_json(run: Run) -> str:
    """The CLI's ``--json`` contract: the summary fields plus ``ops[]``."""
    return json.dumps(run.to_dict())


def chrome_trace(run: Run) -> str:
    """Chrome trace / Perfetto JSON: one complete event per op, each device a thread of process 0.

    Trace times are microseconds, and ppviz times have no unit, so one time unit is written as
    1 ms (``ts = start × 1000``); ui.perfetto.dev then shows the schedule's times as milliseconds.
    The two halves of an overlapped pair are two events with the same ``ts`` and ``dur``.
    """
    r = run.result
    sched = run.schedule
    names = [k.value for k in KINDS]
    paired = r.paired.tolist()
    ts = np.round(r.start * TRACE_US_PER_UNIT, 6).tolist()
    dur = np.round((r.end - r.start) * TRACE_US_PER_UNIT, 6).tolist()
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": f"ppviz {sched.name}"}},
    ]
    for d in range(sched.devices):
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": d, "args": {"name": f"device {d}"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": d, "args": {"sort_index": d}})
    for i, (d, s, m, k) in enumerate(zip(r.device.tolist(), r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist())):
        kind = names[k]
        events.append(
            {
                "name": f"{kind} s{s} mb{m}",
                "cat": "overlapped" if paired[i] else kind,
                "ph": "X",
                "pid": 0,
                "tid": d,
                "ts": ts[i],
                "dur": dur[i],
                "args": {"stage": s, "microbatch": m, "kind": kind, "overlapped": paired[i]},
            }
        )
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"})


def torch_csv(run_or_schedule: Run | Schedule) -> str:
    """The order in PyTorch's compute-only CSV form (one row per rank)."""
    schedule = run_or_schedule.schedule if isinstance(run_or_schedule, Run) else run_or_schedule
    return ir.to_torch_csv(schedule)


def read_torch_csv(
    text: str | bytes, *, max_bytes: int = UPLOAD_LIMIT, max_ranks: int | None = None, name: str = "uploaded"
) -> Schedule:
    """Parse an uploaded order strictly; ValueError says what is wrong. The text is never evaluated.

    Besides the size limit, the stage and microbatch numbers must be consistent with the number
    of actions (a valid order with S stages and M microbatches has at least 2·S·M actions), so a
    small file cannot ask for a huge schedule.
    """
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ValueError(f"the order file is {size:,} bytes; the limit is {max_bytes:,}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ValueError(f"the order file is not UTF-8 text (byte {e.start})") from None
    if max_ranks is not None:
        ranks = len(ir.torch_lines(text))
        if ranks > max_ranks:
            raise ValueError(
                f"the order has {ranks:,} rows (ranks); the limit here is {max_ranks}: give one row per rank"
            )
    rows = ir.parse_torch_rows(text)
    actions = [a for row in rows for step in row if step is not None for a in _halves(step)]
    if not actions:
        raise ValueError("the order holds no actions")
    stages = 1 + max(a.stage for a in actions)
    microbatches = 1 + max(a.microbatch for a in actions)
    if 2 * stages * microbatches > len(actions):
        raise ValueError(
            f"the order names stages 0..{stages - 1} and microbatches 0..{microbatches - 1}, which need at "
            f"least {2 * stages * microbatches:,} actions (a forward and a backward each), but it has "
            f"{len(actions):,}"
        )
    schedule = ir.from_torch_csv(text, name=name)
    validate(schedule)
    return schedule


def _halves(step):
    return (step.first, step.second) if isinstance(step, Overlap) else (step,)
