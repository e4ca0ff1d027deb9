"""Per-stage costs and the p2p latency fitted from a measured run's ops.

Each stage's F, B (input gradient) and W, or its full backward when the backward is not split, is
the median of its ops' durations, with min, max and the sample count. The p2p latency is measured
on every cross-rank dependency the receiver waited for (it started after its previous op ended):
the receiving op's start minus the sending op's end, the latency the simulator adds to such edges.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..costs import Costs
from ..errors import InputError
from ..ir import Kind
from .run import MeasuredRun, Op

WAIT_TOLERANCE_S = 1e-9  # an op that starts this soon after its predecessor did not wait for data


@dataclass(frozen=True)
class Spread:
    """A fitted time (s): median, min, max, and how many samples."""

    median: float
    low: float
    high: float
    samples: int

    @staticmethod
    def of(values: list[float]) -> Spread | None:
        return Spread(statistics.median(values), min(values), max(values), len(values)) if values else None


@dataclass(frozen=True)
class StageFit:
    """One stage: ``b`` is the input-gradient backward when ``w`` exists, else the full backward."""

    stage: int
    f: Spread | None
    b: Spread | None
    w: Spread | None


@dataclass(frozen=True)
class Fit:
    stages: tuple[StageFit, ...]
    p2p: Spread | None
    notes: tuple[str, ...] = ()

    def costs(self) -> Costs:
        """The fitted times as ppviz costs: exact per-stage (f, b, w), BW = b + w, the median p2p."""
        return Costs(
            exact_stage_times=[(_med(s.f), _med(s.b), _med(s.w)) for s in self.stages],
            p2p=_med(self.p2p),
        )


def _med(s: Spread | None) -> float:
    return 0.0 if s is None else s.median


def fit(run: MeasuredRun) -> Fit:
    """Fit a timed run; an InputError says why a run cannot be fitted."""
    if not any(run.ops):
        why = next((n for n in run.notes if n.startswith("no pipeline actions")), "")
        raise InputError(f"the run has no pipeline actions to fit{': ' if why else ''}{why}", field="files")
    if not run.timed:
        raise InputError(
            f"{', '.join(sorted(set(run.sources)))} holds an order without times: fitting needs a measured run "
            "(profiler traces or timer logs)",
            field="files",
        )
    by = {}
    for row in run.ops:
        for op in row:
            by.setdefault((op.stage, op.kind), []).append(op.duration)
    notes = []
    stages = []
    for s in range(run.stages):
        split = (s, Kind.B) in by or (s, Kind.W) in by
        f = Spread.of(by.get((s, Kind.F), []))
        if split:
            b, w = Spread.of(by.get((s, Kind.B), [])), Spread.of(by.get((s, Kind.W), []))
            if (s, Kind.BW) in by:
                notes.append(f"stage {s} runs some full backwards too: simulated as its B + W")
        else:
            b, w = Spread.of(by.get((s, Kind.BW), [])), None
        stages.append(StageFit(s, f, b, w))
    p2p = Spread.of(_latencies(run))
    if p2p is None:
        notes.append("no cross-rank dependency was waited for: p2p latency taken as 0")
    return Fit(tuple(stages), p2p, tuple(notes))


def _latencies(run: MeasuredRun) -> list[float]:
    ends = {(op.stage, op.microbatch, op.kind): op for row in run.ops for op in row}
    last = run.stages - 1
    out = []
    for row in run.ops:
        prev_end = None
        for op in row:
            src = _producer(op, ends, last)
            waited = prev_end is None or op.start - prev_end > WAIT_TOLERANCE_S
            if src is not None and src.rank != op.rank and waited and op.start >= src.end:
                out.append(op.start - src.end)
            prev_end = op.end
    return out


def _producer(op: Op, ends: dict, last: int) -> Op | None:
    """The op on the previous stage (forward) or the next one (backward) this op needs."""
    if op.kind == Kind.F:
        return ends.get((op.stage - 1, op.microbatch, Kind.F)) if op.stage > 0 else None
    if op.kind in (Kind.B, Kind.BW) and op.stage < last:
        nxt = (op.stage + 1, op.microbatch)
        return ends.get((*nxt, Kind.B)) or ends.get((*nxt, Kind.BW))
    return None
