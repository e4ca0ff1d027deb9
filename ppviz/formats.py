"""Exports and imports of a run: ops CSV, the CLI's JSON, Chrome trace, PyTorch order CSV.

Pure text in, text out, built on ``Run`` and the IR: no plotly, no dash, no files. Exports carry
the simulator's exact float64 times.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

from . import ir
from .api import Run
from .errors import InputError
from .ir import KINDS, Overlap, Schedule
from .ops_json import dumps_with_ops, write_with_ops
from .simulator import validate

OPS_HEADER = "device,stage,microbatch,kind,start,end"
TRACE_US_PER_UNIT = 1000.0  # Chrome trace times are microseconds; one time unit is shown as 1 ms
UPLOAD_LIMIT = 1_000_000  # bytes


def ops_csv(run: Run, time_unit: str = "") -> str:
    """One row per op (an overlapped pair gives two rows with the same start and end). A run timed
    in a real unit names it in the header (``time_unit="s"``: ``start_s,end_s``)."""
    rows = [OPS_HEADER if not time_unit else OPS_HEADER.replace("start,end", f"start_{time_unit},end_{time_unit}")]
    rows += [f"{d},{s},{m},{k},{a!r},{b!r}" for d, s, m, k, a, b in run.result.rows()]
    return "\n".join(rows) + "\n"


def run_json(run: Run) -> str:
    """The CLI's ``--json`` contract: the summary fields plus ``ops[]`` (written column-wise, see
    ``ppviz.ops_json``)."""
    return dumps_with_ops(run.summary(), run.result)


def write_run_json(run: Run, out: BinaryIO) -> None:
    """``run_json``'s text written to a binary stream a chunk at a time (never built whole)."""
    write_with_ops(out, run.summary(), run.result)


def chrome_trace(
    run: Run,
    us_per_unit: float = TRACE_US_PER_UNIT,
    memory_unit: str = "microbatch units",
    stage_sizes: Sequence[float] | None = None,
) -> str:
    """Chrome trace / Perfetto JSON: each device a thread of process 0, with

    - one complete event (``X``) per slot: an overlapped pair is one slice naming both ops, with
      both in its args (two identical slices would nest in Perfetto);
    - a counter track (``C``) of each device's activation memory, in ``memory_unit``;
    - a flow arrow (``s`` → ``f``) for every dependency that crosses devices;
    - one complete event per optimizer step placed between iterations (real units; category
      ``optimizer``, its iteration in args).

    Trace times are microseconds. ppviz's abstract times have no unit, so one unit is written as
    1 ms by default (``us_per_unit`` = 1000); runs in seconds pass 1e6. ``stage_sizes`` (one
    microbatch's activation per stage, e.g. bytes) sizes the counters; by default the abstract
    convention (a stage holds p/S units per microbatch).
    """
    from .iterations import optimizer_steps
    from .memory import activation
    from .simulator import dependencies

    r = run.result
    sched = run.schedule
    names = [k.value for k in KINDS]
    ts = np.round(r.start * us_per_unit, 6).tolist()
    dur = np.round((r.end - r.start) * us_per_unit, 6).tolist()
    dev, stage, mb, kind = r.device.tolist(), r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist()
    label = [f"{names[k]} s{s} mb{m}" for s, m, k in zip(stage, mb, kind)]
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": f"ppviz {sched.name}"}},
    ]
    for d in range(sched.devices):
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": d, "args": {"name": f"device {d}"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": d, "args": {"sort_index": d}})
    first_of_slot: dict[int, int] = {}
    for i, slot in enumerate(r.slot.tolist()):
        first = first_of_slot.setdefault(slot, i)
        op = {"stage": stage[i], "microbatch": mb[i], "kind": names[kind[i]]}
        if first != i:  # the second half of a pair joins the slice of the first
            pair = events[-1]
            pair["name"] = f"{pair['name']} & {label[i]}"
            pair["cat"] = "overlapped"
            pair["args"]["ops"].append(op)
            continue
        events.append(
            {"name": label[i], "cat": names[kind[i]], "ph": "X", "pid": 0, "tid": dev[i], "ts": ts[i], "dur": dur[i],
             "args": {"ops": [op], "overlapped": False}}
        )  # fmt: skip
        if i + 1 < len(dev) and r.slot[i + 1] == slot:
            events[-1]["args"]["overlapped"] = True
    st = optimizer_steps(r)
    step_ts = np.round(st.start * us_per_unit, 6).tolist()
    step_dur = np.round((st.end - st.start) * us_per_unit, 6).tolist()
    for d, i, t, length in zip(st.device.tolist(), st.iteration.tolist(), step_ts, step_dur):
        events.append(
            {"name": "optimizer step", "cat": "optimizer", "ph": "X", "pid": 0, "tid": d, "ts": t, "dur": length,
             "args": {"iteration": i}}
        )  # fmt: skip
    curves = activation(r, None if stage_sizes is None else np.asarray(stage_sizes, dtype=float))
    for d in range(sched.devices):
        times = np.round(curves.times[d] * us_per_unit, 6).tolist()
        for t, v in zip(times, curves.values[d].tolist()):
            events.append({"name": f"activation device {d}", "ph": "C", "pid": 0, "ts": t, "args": {memory_unit: v}})
    dep = dependencies(r).tolist()
    flow = 0
    for i, j in enumerate(dep):
        if j < 0 or dev[j] == dev[i]:
            continue
        base = {"name": "dependency", "cat": "dependency", "pid": 0, "id": flow}
        events.append({**base, "ph": "s", "tid": dev[j], "ts": ts[j]})
        events.append({**base, "ph": "f", "bp": "e", "tid": dev[i], "ts": ts[i]})
        flow += 1
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"})


def trace_kwargs(est) -> dict:
    """Keyword arguments of ``chrome_trace`` for an estimate (``ppviz.estimate``): real time (µs from
    seconds) and each stage's activation bytes, so the counters are the per-device activation curves
    in bytes."""
    return {"us_per_unit": 1e6, "memory_unit": "bytes", "stage_sizes": est.plan.activation_bytes.tolist()}


def torch_csv(run_or_schedule: Run | Schedule) -> str:
    """The order in PyTorch's compute-only CSV form (one row per rank)."""
    schedule = run_or_schedule.schedule if isinstance(run_or_schedule, Run) else run_or_schedule
    return ir.to_torch_csv(schedule)


def read_torch_csv(
    text: str | bytes,
    *,
    max_bytes: int = UPLOAD_LIMIT,
    max_ranks: int | None = None,
    name: str = "uploaded",
    naming: str = "auto",
) -> Schedule:
    """Parse an uploaded order strictly; ValueError says what is wrong. The text is never evaluated.

    Every form PyTorch writes is read (``ppviz.measured.torch_csv``): compute-only or compute+comms,
    torch 2.13's naming or the older one; communication tokens are left out of the schedule.
    Besides the size limit, the stage and microbatch numbers must be consistent with the number
    of actions (a valid order with S stages and M microbatches has at least 2·S·M actions), so a
    small file cannot ask for a huge schedule.
    """
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ValueError(f"the order file is {size:,} bytes; the limit is {max_bytes:,}")
    if isinstance(text, bytes):
        if text[:2] == b"\x1f\x8b":
            raise InputError(f"{name} is gzip-compressed, not an order CSV: a PyTorch profiler trace is read by "
                             "`ppviz measured TRACES…` (ppviz.measured.read_run)", field="order")  # fmt: skip
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ValueError(f"the order file is not UTF-8 text (byte {e.start})") from None
    from .measured.files import MEGATRON_MARKS  # the marks `ppviz measured` tells a timer log by

    if any(mark in text[: 1 << 20] for mark in MEGATRON_MARKS):
        raise InputError(f"{name} is a Megatron-LM timer log, not an order CSV: `ppviz measured {name}` reads "
                         "its timers", field="order")  # fmt: skip
    if max_ranks is not None:
        ranks = len(ir.torch_lines(text))
        if ranks > max_ranks:
            raise ValueError(
                f"the order has {ranks:,} rows (ranks); the limit here is {max_ranks}: give one row per rank"
            )
    rows = ir.parse_torch_rows(text, naming, source=name)
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
    schedule = ir.schedule_from_rows(rows, name=name)
    validate(schedule)
    return schedule


def _halves(step):
    return (step.first, step.second) if isinstance(step, Overlap) else (step,)
