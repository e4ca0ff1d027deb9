"""Naming the compute of unannotated Kineto traces by a known order.

torch 2.13's ``Schedule1F1B`` marks no action: a rank's step holds only operators, the autograd
engine's ``autograd::engine::evaluate_function: …`` spans and the ``c10d::`` calls that post p2p. Its
compute is cut into segments, and the k-th forward segment of a rank is named the k-th F of its row in
the order, the k-th backward segment the k-th full backward (B in torch's naming).

A segment is a maximal run of top-level operators of one class (forward: not under the autograd
engine; backward: ``evaluate_function`` spans) with no ``c10d::`` call between them. Dropped:
operators inside ``Optimizer.*`` annotations, bookkeeping operators that follow no segment
(``_NO_WORK``: the microbatch split, detaching, moves), forward runs of in-place scalings alone
(gradient scaling) and forward runs after a rank's last backward (loss gathering). A ``c10d::send``
posted right after a segment carries its output. docs/measured.md has the rules and their checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..ir import Action, Kind, Overlap, read_torch_order

BACKWARD = "autograd::engine::evaluate_function:"
OPTIMIZER = "Optimizer."
# operators that do no model arithmetic (ones_like: the loss gradient's seed): they never start a segment,
# they join the one they follow
_NO_WORK = frozenset(
    f"aten::{n}"
    for n in ("tensor_split", "split", "chunk", "slice", "select", "view", "reshape", "t", "detach", "detach_",
              "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "to", "_to_copy", "lift_fresh",
              "alias", "unsqueeze", "squeeze", "expand", "contiguous", "clone", "cat", "stack", "ones_like")
)  # fmt: skip
# in-place scalings: a forward-class run of nothing else is gradient scaling (torch's scale_grads, run per
# stage when its gradients are reduced), not a forward
_SCALING = frozenset({"aten::div_", "aten::mul_"})
_SPLIT = "split backwards (I and W) cannot be told apart in unannotated traces"


@dataclass
class CpuOps:
    """The operators of one trace a segmentation needs, (start, end, tid, class) with class F, B, send,
    comm, scale or none, and the ``Optimizer.*`` spans. Kineto writes a thread's operators in time order,
    so an operator inside the last kept one of its thread is dropped at once (top level only)."""

    ops: list[tuple[float, float, object, str]] = field(default_factory=list)
    optimizer: list[tuple[float, float]] = field(default_factory=list)
    last: dict[object, tuple[float, float]] = field(default_factory=dict)

    def take(self, name: str, cat: object, start: float, end: float, tid: object) -> None:
        if cat != "cpu_op":
            if name.startswith(OPTIMIZER):
                self.optimizer.append((start, end))
            return
        lo, hi = self.last.get(tid, (0.0, -1.0))
        if lo <= start and end <= hi:
            return
        self.last[tid] = (start, end)
        self.ops.append((start, end, tid, _class(name)))


def _class(name: str) -> str:
    if name.startswith(BACKWARD):
        return "B"
    if name.startswith("c10d::"):
        return "send" if name == "c10d::send" else "comm"
    return "none" if name in _NO_WORK else "scale" if name in _SCALING else "F"


@dataclass
class Segment:
    kind: str  # F or B
    start: float
    end: float
    sends: list[tuple[float, float]] = field(default_factory=list)  # c10d::send posted right after it
    scaling: bool = False  # made only of in-place scalings so far


def segments(cpu: CpuOps, lo: float, hi: float, main_tid: object) -> list[Segment]:
    """The rank's compute segments in ProfilerStep [lo, hi]: its main thread's operators, plus backward
    spans of other threads (the autograd engine's device threads on a GPU)."""
    ops = sorted(o for o in cpu.ops if lo <= o[0] <= hi and (o[2] == main_tid or o[3] == "B")
                 and not any(a <= o[0] <= b for a, b in cpu.optimizer))  # fmt: skip
    out: list[Segment] = []
    current: Segment | None = None
    posting = False  # only communication since the last segment closed: its sends carry its output
    free = None  # when the rank was done with its previous work: the next segment starts there
    for start, end, _tid, cls in ops:
        if cls in ("send", "comm"):
            if current is not None:
                out.append(current)
                current, posting = None, True
            if cls == "send" and posting:
                out[-1].sends.append((start, end))
                free = end
            continue
        posting = False
        if cls == "none" and current is None:  # bookkeeping between segments: no one's work
            continue
        begin, free = start if free is None else min(start, free), end
        kind = "F" if cls == "scale" else cls
        if current is not None and kind in ("none", current.kind):
            current.end = max(current.end, end)
            current.scaling = current.scaling and cls in ("scale", "none")
            continue
        if current is not None:
            out.append(current)
        current = Segment(kind, begin, end, scaling=cls == "scale")
    if current is not None:
        out.append(current)
    out = [s for s in out if not s.scaling]
    last_backward = max((i for i, s in enumerate(out) if s.kind == "B"), default=len(out))
    return out[: last_backward + 1]


@dataclass(frozen=True)
class ByOrder:
    """Where the names come from: an order's rows (one per rank), or a registry schedule built for the
    traces' ranks and forward count."""

    rows: tuple[tuple[Action, ...], ...] | None = None
    schedule: str | None = None
    source: str = ""

    def rows_for(self, ranks: int, forwards: int) -> tuple[tuple[Action, ...], ...]:
        if self.rows is None:
            from ..schedules.registry import build

            return _checked(build(self.schedule, ranks, max(forwards, 1)).order, self.said)
        if len(self.rows) != ranks:
            raise InputError(f"{self.source} is an order for {len(self.rows)} ranks, but the traces are of "
                             f"{ranks} ranks", field="order")  # fmt: skip
        return self.rows

    @property
    def said(self) -> str:
        return f"the order of {self.source}" if self.rows is not None else f"the schedule {self.schedule}"


def _checked(rows, said: str) -> tuple[tuple[Action, ...], ...]:
    """The rows' actions (idle slots dropped), refusing what unannotated traces cannot tell apart."""
    out = []
    for r, row in enumerate(rows):
        actions = tuple(a for a in row if a is not None)
        if any(isinstance(a, Overlap) for a in actions):
            raise InputError(f"{said}: rank {r} overlaps two actions in one step, which unannotated traces "
                             "cannot tell apart", field="order")  # fmt: skip
        if any(a.kind in (Kind.B, Kind.W) for a in actions):
            raise InputError(f"{said}: rank {r} splits its backward into I and W: {_SPLIT}; only orders with F "
                             "and full backwards (B) name them", field="order")  # fmt: skip
        out.append(actions)
    return tuple(out)


def from_csv(text: str, source: str) -> ByOrder:
    """An order CSV (compute-only or compute+comms, either torch naming): its compute, per rank."""
    return ByOrder(_checked(read_torch_order(text, source=source).rows, source), source=source)


def from_schedule(name: str) -> ByOrder:
    """A registry schedule with one stage per rank and full backwards only (gpipe, 1f1b and their kin)."""
    from ..schedules import REGISTRY
    from ..schedules.registry import get

    get(name)  # an unknown name is refused with the list
    why = _why_not(name)
    if why is not None:
        plain = ", ".join(n for n in REGISTRY if _why_not(n) is None)
        raise InputError(f"--schedule names unannotated traces only by a schedule with one stage per rank and "
                         f"full backwards ({plain}); {name} {why}. Pass the order the run ran with --order "
                         "(torch's schedule._dump_csv)", field="schedule")  # fmt: skip
    return ByOrder(schedule=name)


def _why_not(name: str) -> str | None:
    """Why the schedule's order cannot name unannotated traces, or None when it can."""
    from ..schedules.registry import REGISTRY, build

    spec = REGISTRY[name]
    if spec.split_backward:
        return f"splits its backward: {_SPLIT}"
    if spec.chunks != 1:
        return (
            "runs several stages per rank: which stage and microbatch its k-th forward is depends on the "
            "exact order, which its name does not fix"
        )
    try:
        _checked(build(name, 2, 4).order, name)
    except InputError:
        return "overlaps a forward and a backward in one step, which unannotated traces cannot tell apart"
    return None


def name_step(ranks: list[tuple[list[Segment], list[float]]], by: ByOrder) -> list[tuple[list, list]]:
    """Per rank, from its segments and the starts of its receives: its (segment, action) pairs in the order
    they ran, and its p2p labels ``(start, end, send|recv, action)``: a send carries the output of the
    segment that posted it; the k-th receive feeds the k-th action that takes its input from another rank
    (torch posts receives in the order their consumers run; unlabelled when the counts differ)."""
    pairs = _named([segs for segs, _ in ranks], by)
    stage_rank = {a.stage: r for r, row in enumerate(pairs) for _s, a in row}
    out = []
    for r, (row, (_segs, recvs)) in enumerate(zip(pairs, ranks)):
        labels = [(lo, hi, "send", a) for seg, a in row for lo, hi in seg.sends]
        fed = [a for _s, a in row if _source_rank(a, stage_rank, r) not in (None, r)]
        if len(fed) == len(recvs):
            labels += [(t, t, "recv", a) for t, a in zip(sorted(recvs), fed)]
        out.append((row, labels))
    return out


def _named(segs: list[list[Segment]], by: ByOrder) -> list[list[tuple[Segment, Action]]]:
    """Each rank's segments with the action of the order they are; an InputError when counts differ."""
    forwards = sum(s.kind == "F" for s in segs[0]) if segs else 0
    rows = by.rows_for(len(segs), forwards)
    out = []
    for r, (row, own) in enumerate(zip(rows, segs)):
        f, b = [a for a in row if a.kind == Kind.F], [a for a in row if a.kind == Kind.BW]
        found = [s for s in own if s.kind == "F"], [s for s in own if s.kind == "B"]
        if (len(found[0]), len(found[1])) != (len(f), len(b)):
            raise InputError(f"rank {r} ran {len(found[0])} forward and {len(found[1])} backward segments, but "
                             f"{by.said} has {len(f)} F and {len(b)} B for it: give the order this run ran",
                             field="order")  # fmt: skip
        out.append(sorted([*zip(found[0], f), *zip(found[1], b)], key=lambda pair: pair[0].start))
    return out


def _source_rank(a: Action, stage_rank: dict[int, int], rank: int) -> int | None:
    """The rank an action's input comes from (None: the first stage's forward, the last's backward)."""
    return stage_rank.get(a.stage - 1 if a.kind == Kind.F else a.stage + 1)
