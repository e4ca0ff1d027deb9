"""PyTorch profiler (Kineto) Chrome traces, one file per rank, read by streaming (bounded memory).

Per file: the rank (``distributedInfo.rank``), the clock base (``baseTimeNanoseconds``), the
``ProfilerStep#N`` spans, the actions and the p2p events. Only those are kept, so memory grows with
the number of actions, not with the trace. Actions come from the pipelining runtime's annotations
(``PP:0F3``, ``PP:1I0``, ``PP:0SEND_F1``…), GPipe's ``Forward 3`` / ``Backward 3`` (the stage is the
rank's), or a regex with named groups ``stage`` (optional: the rank's), ``kind`` and ``microbatch``
for other frameworks. An action's span starts when the receive of its input completes inside it (waiting
is not work) and runs through posting the send of its output (the rank is busy doing it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import ijson

from ..errors import InputError
from ..ir import KIND_TABLES, Kind, choose_naming, parse_comms
from ..simulator import validate
from .files import open_binary
from .run import Comm, MeasuredRun, Op, peer_of
from .unannotated import ByOrder, CpuOps, name_step, segments

_PP = re.compile(r"PP:(.+)")
_PP_COMPUTE = re.compile(r"(?P<stage>\d+)(?P<kind>BW|F|I|W|B)(?P<microbatch>\d+)")
_GPIPE = re.compile(r"(?P<kind>Forward|Backward) (?P<microbatch>\d+)")
_STEP = re.compile(r"ProfilerStep#(\d+)")
_WORK = {"gloo:send": "send", "gloo:recv": "recv", "nccl:send": "send", "nccl:recv": "recv"}
_POST = {"c10d::send": "send", "c10d::recv_": "recv"}
_PATTERN_KINDS = {"F", "I", "W", "B", "BW"}
# bytes per element of the dtypes a p2p event's args name (Kineto: "In msg nelems", "dtype")
_ITEMSIZE = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Int": 4, "Long": 8, "Short": 2, "Byte": 1,
             "Char": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1}  # fmt: skip


@dataclass
class _Span:
    start: float  # µs on the rank's own clock
    end: float
    name: str = ""
    stage: int | None = None
    kind: str = ""  # compute: F/I/W/B/BW as written; p2p: send/recv
    microbatch: int | None = None
    direction: str | None = None
    tid: object = None
    bytes: int | None = None


@dataclass
class _Rank:
    """What one file holds that matters, as read."""

    source: str
    rank: int | None = None
    world: int | None = None  # distributedInfo.world_size
    host: str | None = None  # host_name
    gpus: bool = False  # deviceProperties lists a device
    base_ns: int = 0
    steps: dict[int, tuple[float, float]] = field(default_factory=dict)
    actions: list[_Span] = field(default_factory=list)
    gpu_actions: list[_Span] = field(default_factory=list)
    comm_actions: list[_Span] = field(default_factory=list)  # PP:<s>SEND_F<m> and the like
    work: list[_Span] = field(default_factory=list)  # gloo:/nccl: send and recv spans
    posts: list[_Span] = field(default_factory=list)  # c10d::send / c10d::recv_
    launches: list[tuple[float, float, object, int]] = field(default_factory=list)  # (ts, end, tid, correlation)
    kernels: dict[int, tuple[float, float]] = field(default_factory=dict)  # nccl kernels by correlation
    cpu: CpuOps | None = None  # top-level operators, kept only to name unannotated compute by an order
    annotations: bool = True  # False: PP:, Forward/Backward and pattern spans are not read
    step_tids: dict[int, object] = field(default_factory=dict)


def read_traces(paths: list[str], *, iteration: int | None = None, pattern: str | None = None,
                by_order: ByOrder | None = None, ignore_annotations: bool = False) -> MeasuredRun:  # fmt: skip
    """The run's chosen iteration (default: the last complete one) from one trace per rank. Traces without
    annotations (or all traces, with ``ignore_annotations``) are named by ``by_order`` (``unannotated``)."""
    if ignore_annotations and by_order is None:
        raise InputError("ignoring the annotations needs an order to name the compute by: give --order or "
                         "--schedule", field="order")  # fmt: skip
    if by_order is not None and pattern is not None:
        raise InputError("give one way of naming the actions: --pattern, or --order / --schedule", field="pattern")
    regex = _compile(pattern)
    ranks = [_scan(p, regex, by_order is not None, not ignore_annotations) for p in paths]
    notes: list[str] = []
    if any(r.rank is None for r in ranks):
        if len(ranks) > 1:
            missing = next(r.source for r in ranks if r.rank is None)
            raise InputError(f"{missing} has no distributedInfo.rank: cannot tell which rank it is", field="files")
        ranks[0].rank = 0
        notes.append(f"{ranks[0].source} has no distributedInfo.rank: taken as rank 0")
    ranks.sort(key=lambda r: r.rank)
    seen = [r.rank for r in ranks]
    if seen != list(range(len(ranks))):
        raise InputError(f"the traces are of ranks {seen}: give one trace per rank, ranks 0 to {len(ranks) - 1}",
                         field="files")  # fmt: skip
    notes += _shared_hosts(ranks)
    worlds = {r.world for r in ranks if r.world is not None}
    if worlds and worlds != {len(ranks)}:
        raise InputError(f"the traces are of a run of world size {', '.join(map(str, sorted(worlds)))}, but "
                         f"{len(ranks)} given: give one trace per rank", field="files")  # fmt: skip
    steps = sorted(set.intersection(*(set(r.steps) for r in ranks)))
    if not steps:
        raise InputError("no ProfilerStep#N is in every trace: profile with torch.profiler's schedule and "
                         "call prof.step() once per iteration", field="iteration")  # fmt: skip
    if iteration is not None and iteration not in steps:
        raise InputError(f"ProfilerStep#{iteration} is not in every trace; they share {_listed(steps)}",
                         field="iteration")  # fmt: skip
    base = min(r.base_ns for r in ranks)
    if by_order is not None and not any(r.actions or r.gpu_actions for r in ranks):
        return _by_order(ranks, steps, iteration, by_order, base, notes)
    if by_order is not None:
        notes.append(f"the traces are annotated: their annotations name the actions, {by_order.said} is not "
                     "used (--ignore-annotations names them by it)")  # fmt: skip
    naming = _naming_of(ranks)
    table = KIND_TABLES["torch-old-full" if naming == "torch-old" and not _has(ranks, "W") else naming]
    if iteration is not None:
        run = _build(ranks, iteration, table, base)
    else:
        run = next((r for r in (_build(ranks, n, table, base) for n in steps[::-1]) if _complete(r)), None)
        if run is not None:
            notes.append(f"iteration: ProfilerStep#{run.iteration}, the last complete one of {_listed(steps)}")
        else:
            run = _build(ranks, steps[-1], table, base)
            notes.append(f"iteration: {_listed(steps[-1:])}, the last of {_listed(steps)}; none has a complete "
                         "order on every rank")  # fmt: skip
    if not any(run.ops):
        notes.append(
            "no pipeline actions in the traces: this schedule class does not annotate its actions "
            "(torch 2.13's Schedule1F1B, for one): name its compute by the order it ran with --order FILE "
            "(torch's schedule._dump_csv) or --schedule NAME, or give --pattern for your annotations"
        )
    elif regex is None and any(r.actions and r.actions[0].stage is None for r in ranks):
        notes.append("GPipe's Forward/Backward annotations: each rank runs one stage, its own")
    if regex is not None:
        notes.append(f"actions from the pattern {regex.pattern!r}")
    if any(r.gpu_actions for r in ranks):
        notes.append("actions timed on the GPU (gpu_user_annotation spans)")
    notes.append(
        "an action runs from the end of its input's receive (when it waited inside) through posting its output's send"
    )
    if naming != "torch":
        notes.append("naming: torch's older one (B = input gradient, BW = full backward)")
    return replace(run, notes=run.notes + tuple(notes))


def _by_order(ranks: list[_Rank], steps: list[int], iteration: int | None, by: ByOrder, base: int,
              notes: list[str]) -> MeasuredRun:  # fmt: skip
    """The chosen step with each rank's compute segments named by the order (the last step whose
    segments match it, by default)."""
    table = KIND_TABLES["torch"]
    if by.rows is not None:
        by.rows_for(len(ranks), 0)  # an order for another number of ranks is refused whatever the step
    error = None
    for n in [iteration] if iteration is not None else steps[::-1]:
        try:
            run = _build(_named(ranks, n, by), n, table, base)
        except InputError as e:
            error = error or e
            continue
        if iteration is None:
            notes.append(f"iteration: ProfilerStep#{n}, the last whose compute matches the order, of {_listed(steps)}")
        notes += [f"no annotations: compute named by {by.said} (the k-th forward segment of a rank is the k-th F "
                  "of its row, the k-th backward segment its k-th B)",
                  "a segment runs from the end of the rank's previous work (or of the receive it waited for) "
                  "through posting its output's send"]  # fmt: skip
        return replace(run, notes=run.notes + tuple(notes))
    raise InputError(f"ProfilerStep#{steps[-1] if iteration is None else iteration}: {error}", field=error.field)


def _named(ranks: list[_Rank], n: int, by: ByOrder) -> list[_Rank]:
    """Copies of the ranks whose actions are step ``n``'s named segments, with their p2p labels."""
    steps = [(segments(r.cpu, *r.steps[n], r.step_tids.get(n)),
              [w.start for w in r.work if w.kind == "recv" and r.steps[n][0] <= w.start <= r.steps[n][1]])
             for r in ranks]  # fmt: skip
    out = []
    for r, (row, labels) in zip(ranks, name_step(steps, by)):
        actions = [_Span(s.start, s.end, stage=a.stage, kind="F" if a.kind == Kind.F else "B",
                         microbatch=a.microbatch) for s, a in row]  # fmt: skip
        comms = [_Span(lo, hi, stage=a.stage, kind=what, microbatch=a.microbatch,
                       direction="F" if a.kind == Kind.F else "B") for lo, hi, what, a in labels]  # fmt: skip
        out.append(replace(r, actions=actions, gpu_actions=[], comm_actions=comms))
    return out


def _listed(steps: list[int]) -> str:
    return ", ".join(f"ProfilerStep#{n}" for n in steps)


def _compile(pattern: str | None) -> re.Pattern | None:
    if pattern is None:
        return None
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise InputError(f"the pattern is not a valid regular expression: {e}", field="pattern") from None
    missing = {"kind", "microbatch"} - set(regex.groupindex)
    if missing:
        raise InputError(f"the pattern needs the named groups (?P<kind>…) and (?P<microbatch>…), optionally "
                         f"(?P<stage>…); it lacks {', '.join(sorted(missing))}", field="pattern")  # fmt: skip
    return regex


def _has(ranks: list[_Rank], kind: str) -> bool:
    return any(a.kind == kind for r in ranks for a in r.actions + r.gpu_actions)


def _naming_of(ranks: list[_Rank]) -> str:
    kinds = {a.kind for r in ranks for a in r.actions + r.gpu_actions}
    return choose_naming(kinds, False, "auto", "the traces")


def _complete(run: MeasuredRun) -> bool:
    if not all(run.ops):
        return False
    try:
        validate(run.schedule())
    except ValueError:
        return False
    return True


# --- one file -------------------------------------------------------------------------------


def _scan(path: str, regex: re.Pattern | None, operators: bool = False, annotations: bool = True) -> _Rank:
    out = _Rank(path, cpu=CpuOps() if operators else None, annotations=annotations)
    complete = _read_header(path, out, whole=False)
    with open_binary(path) as fh:
        index = -1
        try:
            for index, ev in enumerate(ijson.items(fh, "traceEvents.item", use_float=True)):
                _take(ev, index, out, regex)
        except ijson.JSONError as e:
            where = f"after event {index}" if index >= 0 else "before the first event"
            raise InputError(f"{path}: not valid trace JSON {where} (byte {fh.count:,}): {_first_line(e)}",
                             field="files") from None  # fmt: skip
        except (OSError, EOFError) as e:
            raise InputError(f"{path}: cannot decompress: {e}", field="files") from None
    if index < 0:
        raise InputError(f"{path}: no traceEvents: expected a PyTorch profiler (Chrome trace) JSON", field="files")
    if not complete:
        _read_header(path, out, whole=True)
    return out


def _shared_hosts(ranks: list[_Rank]) -> list[str]:
    """A note for each host that ran several ranks without a GPU: their compute shared its cores."""
    by_host: dict[str, list[int]] = {}
    for r in ranks:
        if r.host is not None and not r.gpus:
            by_host.setdefault(r.host, []).append(r.rank)
    return [f"ranks {', '.join(map(str, on))} ran on one host ({host}) without a GPU, so their compute shared its "
            f"cores: if it has fewer than {len(on)}, fit with --cores N (the page: host cores the ranks shared)"
            for host, on in by_host.items() if len(on) > 1]  # fmt: skip


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _read_header(path: str, out: _Rank, whole: bool) -> bool:
    """``distributedInfo.rank`` and ``baseTimeNanoseconds``. Kineto writes them before the events, so the
    first pass stops at ``traceEvents``; only when they were not there is the whole file walked.
    Returns whether both were found."""
    found: set[str] = set()
    with open_binary(path) as fh:
        try:
            for prefix, event, value in ijson.parse(fh, use_float=True):
                if prefix == "distributedInfo.rank" and event == "number":
                    out.rank, _ = int(value), found.add("rank")
                elif prefix == "distributedInfo.world_size" and event == "number":
                    out.world = int(value)
                elif prefix == "host_name" and event == "string":
                    out.host = value
                elif prefix == "deviceProperties.item" and event == "start_map":
                    out.gpus = True
                elif prefix == "baseTimeNanoseconds" and event == "number":
                    out.base_ns, _ = int(value), found.add("base")
                elif prefix == "traceEvents" and event == "start_array" and not whole:
                    return len(found) == 2
                elif prefix == "" and event == "start_array":
                    raise InputError(f"{path}: a bare JSON array of events: expected a PyTorch profiler trace "
                                     "(an object with traceEvents)", field="files")  # fmt: skip
        except ijson.JSONError as e:
            raise InputError(f"{path}: not valid JSON (byte {fh.count:,}): {_first_line(e)}", field="files") from None
        except (OSError, EOFError) as e:
            raise InputError(f"{path}: cannot decompress: {e}", field="files") from None
    return len(found) == 2


def _take(ev: object, index: int, out: _Rank, regex: re.Pattern | None) -> None:
    if ev.__class__ is not dict or ev.get("ph") != "X":
        return
    name, cat = ev.get("name"), ev.get("cat")
    if cat == "cpu_op" and regex is None and name not in _POST and out.cpu is None:  # most of a trace
        return
    if not isinstance(name, str):
        return
    ts, dur = ev.get("ts"), ev.get("dur", 0.0)
    if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or dur < 0:
        raise InputError(f"{out.source}: event {index} ({name!r}): expected numbers ts and dur ≥ 0 "
                         f"(got ts {ts!r}, dur {dur!r})", field="files")  # fmt: skip
    span = _Span(float(ts), float(ts) + float(dur), name, tid=ev.get("tid"))
    if out.cpu is not None:
        out.cpu.take(name, cat, span.start, span.end, span.tid)
        if cat == "cpu_op" and name not in _POST:
            return
    step = _STEP.fullmatch(name)
    if step:
        out.steps[int(step.group(1))] = (span.start, span.end)
        out.step_tids[int(step.group(1))] = span.tid
        return
    if cat == "kernel" and "nccl" in name.lower():
        corr = (ev.get("args") or {}).get("correlation")
        if corr is not None:
            out.kernels[corr] = (span.start, span.end)
        return
    if cat == "cuda_runtime":
        corr = (ev.get("args") or {}).get("correlation")
        if corr is not None and "Launch" in name:
            out.launches.append((span.start, span.end, span.tid, corr))
        return
    if name in _WORK or name in _POST:
        span.kind, span.bytes = _WORK.get(name) or _POST[name], _bytes(ev.get("args"))
        (out.work if name in _WORK else out.posts).append(span)
        return
    gpu = cat == "gpu_user_annotation"
    if not out.annotations:
        return
    if regex is not None:
        m = regex.fullmatch(name)
        if m:
            _action(span, m, out, gpu, index)
        return
    pp = _PP.fullmatch(name)
    if pp:
        m = _PP_COMPUTE.fullmatch(pp.group(1))
        if m:
            _action(span, m, out, gpu, index)
            return
        comms = parse_comms(pp.group(1), 0)
        if comms and not gpu:
            for c in comms:
                out.comm_actions.append(replace(span, stage=c.stage, kind=c.what, microbatch=c.microbatch,
                                                direction=c.direction))  # fmt: skip
        return
    m = _GPIPE.fullmatch(name)
    if m and cat in ("user_annotation", "gpu_user_annotation"):
        span.kind = "F" if m.group("kind") == "Forward" else "B"
        span.microbatch = int(m.group("microbatch"))
        (out.gpu_actions if gpu else out.actions).append(span)


def _bytes(args: object) -> int | None:
    if not isinstance(args, dict):
        return None
    n, size = args.get("In msg nelems", args.get("Out msg nelems")), _ITEMSIZE.get(args.get("dtype"))
    return int(n) * size if isinstance(n, (int, float)) and size else None


def _action(span: _Span, m: re.Match, out: _Rank, gpu: bool, index: int) -> None:
    groups = m.groupdict()
    kind = (groups.get("kind") or "").upper()
    if kind not in _PATTERN_KINDS:
        raise InputError(f"{out.source}: event {index} ({span.name!r}): kind {groups.get('kind')!r} is not one of "
                         "F, I, W, B, BW", field="pattern")  # fmt: skip
    try:
        span.microbatch = int(groups["microbatch"])
        span.stage = None if groups.get("stage") is None else int(groups["stage"])
    except (TypeError, ValueError):
        raise InputError(f"{out.source}: event {index} ({span.name!r}): stage and microbatch must be whole "
                         "numbers", field="pattern") from None  # fmt: skip
    span.kind = kind
    (out.gpu_actions if gpu else out.actions).append(span)


# --- one iteration --------------------------------------------------------------------------


def _build(ranks: list[_Rank], n: int, table: dict[str, Kind], base_ns: int) -> MeasuredRun:
    """Iteration ``n`` on one clock: seconds from the first action's start over all ranks."""
    timed, p2p = [], []
    for r in ranks:
        lo, hi = r.steps[n]
        offset = (r.base_ns - base_ns) / 1000.0  # µs between this rank's clock base and the earliest
        own = sorted((a for a in (r.gpu_actions or r.actions) if lo <= a.start <= hi), key=lambda a: a.start)
        labels = [c for c in r.comm_actions if lo <= c.start <= hi]
        posts = [p for p in r.posts if lo <= p.start <= hi]
        work = [_on_gpu(_label(_sized(w, posts), labels, own, r.rank), r) for w in r.work if lo <= w.start <= hi]
        ends = _with_sends(own, labels, hi, r.rank)
        timed.append([(a, _started(a, work, r.rank) + offset, end + offset) for a, end in zip(own, ends)])
        p2p += [(r.rank, w, offset) for w in work]
    origin = min((start for row in timed for _, start, _ in row), default=None)
    if origin is None:
        origin = min(r.steps[n][0] + (r.base_ns - base_ns) / 1000.0 for r in ranks)
    ops = tuple(
        tuple(Op(r.rank, r.rank if a.stage is None else a.stage, a.microbatch, table.get(a.kind, Kind.BW),
                 (start - origin) / 1e6, (end - origin) / 1e6) for a, start, end in row)
        for r, row in zip(ranks, timed)
    )  # fmt: skip
    stage_rank = {op.stage: op.rank for row in ops for op in row}
    comms = []
    for rank, w, offset in p2p:
        comm = Comm(rank, w.kind, w.stage, w.microbatch, w.direction, None,
                    (w.start + offset - origin) / 1e6, (w.end + offset - origin) / 1e6, w.bytes)  # fmt: skip
        comms.append(replace(comm, peer=peer_of(comm, stage_rank)) if comm.direction else comm)
    return MeasuredRun("kineto", len(ranks), ops, tuple(comms), n, tuple(r.source for r in ranks), ())


def _sized(w: _Span, posts: list[_Span]) -> _Span:
    """The size of a p2p span: its own args', else those of the post of the same kind just before it."""
    if w.bytes is not None:
        return w
    before = [p for p in posts if p.kind == w.kind and p.start <= w.start and p.bytes is not None]
    return replace(w, bytes=max(before, key=lambda p: p.start).bytes) if before else w


def _on_gpu(w: _Span, r: _Rank) -> _Span:
    """A p2p span timed by its NCCL kernel when the trace has one (launched inside the span)."""
    if not r.kernels:
        return w
    for ts, _end, tid, corr in r.launches:
        if tid == w.tid and w.start <= ts <= w.end and corr in r.kernels:
            start, end = r.kernels[corr]
            return replace(w, start=start, end=end)
    return w


def _started(a: _Span, work: list[_Span], rank: int) -> float:
    """When the action's own work began: after the receive of its input, when that completes inside it
    (the runtime waits for it there; a receive known to be another action's does not count)."""
    stage, direction = _stage(a, rank), _direction(a)
    key = (stage, a.microbatch, direction)
    mine = [w.end for w in work if w.kind == "recv" and a.start < w.end < a.end
            and (w.stage is None or (w.stage, w.microbatch, w.direction) == key)]  # fmt: skip
    return max(mine, default=a.start)


def _with_sends(own: list[_Span], labels: list[_Span], step_end: float, rank: int) -> list[float]:
    """Each action's end, through posting the send of its output when the runtime does that as its own
    action right after (``PP:<s>SEND_F<m>``): the rank is busy posting it. GPipe posts inside the span."""
    out = []
    for i, a in enumerate(own):
        until = own[i + 1].start if i + 1 < len(own) else step_end
        key = (_stage(a, rank), a.microbatch, _direction(a))
        sends = [c.end for c in labels if c.kind == "send" and (c.stage, c.microbatch, c.direction) == key
                 and a.end <= c.start <= until]  # fmt: skip
        out.append(max(sends, default=a.end) if a.kind != "W" else a.end)
    return out


def _stage(a: _Span, rank: int) -> int:
    return rank if a.stage is None else a.stage


def _direction(a: _Span) -> str:
    return "F" if a.kind == "F" else "B"


def _label(w: _Span, labels: list[_Span], own: list[_Span], rank: int) -> _Span:
    """The p2p span with the rank, stage, microbatch and direction of the action that made it."""
    for c in labels:
        if c.start <= w.start <= c.end and c.kind == w.kind:
            return replace(w, stage=c.stage, microbatch=c.microbatch, direction=c.direction)
    for a in own:
        if a.start <= w.start <= a.end:
            return replace(w, stage=_stage(a, rank), microbatch=a.microbatch, direction=_direction(a))
    return w
