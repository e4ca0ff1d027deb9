"""Per-stage costs, the p2p latency and each rank's host overhead, fitted from a measured run's ops.

Each stage's F, B (input gradient) and W, or its full backward when the backward is not split, is
the mean of its ops' durations (``estimator="median"``: their median), with median, min, max and
the sample count. The mean is the default because a step's time is a sum of op times: a real run's
ops have long tails (preemption, allocator, a busy peer), which the step pays and a median drops.

Between two ops a rank's host is busy too: it dispatches the next op and posts its sends and
receives. The simulator adds this host overhead (``Costs.host_overhead``) before each op but a
rank's first, and the p2p latency to each dependency that crosses ranks, so an op starts at
max(previous end + overhead, input's end + latency). Both are fitted together from the gaps
before ops: an op waited for its input when the input's end + latency is after its previous op's
end + overhead; the latency is the average of (start − input's end) over the ops that waited, a
rank's overhead the average gap before its ops that did not. Each depends on the other's split, so
the two are iterated from a first split (ops without input from another rank give the overhead)
until the split no longer changes. On a run simulated with exact costs both come back exactly.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..costs import Costs
from ..errors import InputError
from ..ir import Kind
from . import shared_cores
from .run import MeasuredRun, Op

ESTIMATORS = ("mean", "median")
MAX_SPLITS = 100  # the latency / overhead split settles in a few rounds; a cycle stops here


@dataclass(frozen=True)
class Spread:
    """A fitted time (s): ``time`` (the mean or the median, as the fit's estimator says), the median,
    min, max, and how many samples."""

    time: float
    median: float
    low: float
    high: float
    samples: int

    @staticmethod
    def of(values: list[float], estimator: str = "mean") -> Spread | None:
        if not values:
            return None
        median = statistics.median(values)
        time = statistics.fmean(values) if estimator == "mean" else median
        return Spread(time, median, min(values), max(values), len(values))


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
    host_overhead: tuple[Spread | None, ...] = ()  # per rank
    estimator: str = "mean"
    notes: tuple[str, ...] = ()
    cores: int | None = None  # the host's cores the ranks time-shared (shared_cores); None: a device per rank

    def costs(self) -> Costs:
        """The fitted times as ppviz costs: exact per-stage (f, b, w), BW = b + w, the p2p latency and
        each rank's host overhead."""
        return Costs(
            exact_stage_times=[(time(s.f), time(s.b), time(s.w)) for s in self.stages],
            p2p=time(self.p2p),
            host_overhead=self.host_overhead_s,
        )

    @property
    def host_overhead_s(self) -> tuple[float, ...]:
        return tuple(time(s) for s in self.host_overhead)


def time(s: Spread | None) -> float:
    """A fitted time, 0 where nothing was measured."""
    return 0.0 if s is None else s.time


def fit(run: MeasuredRun, estimator: str = "mean", cores: int | None = None) -> Fit:
    """Fit a timed run; an InputError says why a run cannot be fitted. With ``cores`` fewer than the ranks,
    the op times are each op's own work, its time-sharing of the cores taken out (``shared_cores``)."""
    if estimator not in ESTIMATORS:
        raise InputError(f"unknown estimator {estimator!r}: use one of {', '.join(ESTIMATORS)}", field="estimator")
    if not any(run.ops):
        why = next((n for n in run.notes if n.startswith("no pipeline actions")), "")
        raise InputError(f"the run has no pipeline actions to fit{': ' if why else ''}{why}", field="files")
    if not run.timed:
        raise InputError(
            f"{', '.join(sorted(set(run.sources)))} holds an order without times: fitting needs a measured run "
            "(profiler traces or timer logs)",
            field="files",
        )
    if cores is not None and shared_cores.check_cores(cores) < run.ranks:
        by = shared_cores.uncontended(run, cores)
    else:
        by, cores = {}, None
        for row in run.ops:
            for op in row:
                by.setdefault((op.stage, op.kind), []).append(op.duration)
    notes = []
    stages = []
    for s in range(run.stages):
        split = (s, Kind.B) in by or (s, Kind.W) in by
        f = Spread.of(by.get((s, Kind.F), []), estimator)
        if split:
            b, w = Spread.of(by.get((s, Kind.B), []), estimator), Spread.of(by.get((s, Kind.W), []), estimator)
            if (s, Kind.BW) in by:
                notes.append(f"stage {s} runs some full backwards too: simulated as its B + W")
        else:
            b, w = Spread.of(by.get((s, Kind.BW), []), estimator), None
        stages.append(StageFit(s, f, b, w))
    waits, gaps = _split_gaps(_gaps(run), run.ranks, estimator)
    p2p = Spread.of(waits, estimator)
    if p2p is None:
        notes.append("no op waited for an input from another rank: p2p latency taken as 0")
    elif p2p.time < 0:  # ranks' clocks disagree by more than the latency
        notes.append(f"ops started {-p2p.time * 1e3:.3f} ms before their inputs ended on average: the ranks' clocks "
                     "are not aligned; p2p latency taken as 0")  # fmt: skip
        p2p = Spread(0.0, p2p.median, p2p.low, p2p.high, p2p.samples)
    overhead = tuple(Spread.of(g, estimator) for g in gaps)
    return Fit(tuple(stages), p2p, overhead, estimator, tuple(notes), cores)


@dataclass(frozen=True)
class _Gap:
    rank: int
    gap: float  # start − the previous op's end on the rank
    waited: float | None  # start − the input's end, when the input came from another rank
    ahead: float | None  # the input's end − the previous op's end, likewise


def _gaps(run: MeasuredRun) -> list[_Gap]:
    ends = {(op.stage, op.microbatch, op.kind): op for row in run.ops for op in row}
    last = run.stages - 1
    out = []
    for r, row in enumerate(run.ops):
        for prev, op in zip(row, row[1:]):
            src = _producer(op, ends, last)
            cross = src is not None and src.rank != op.rank
            out.append(_Gap(r, op.start - prev.end, op.start - src.end if cross else None,
                            src.end - prev.end if cross else None))  # fmt: skip
    return out


def _split_gaps(gaps: list[_Gap], ranks: int, estimator: str) -> tuple[list[float], list[list[float]]]:
    """The waits that give the latency and, per rank, the gaps that give its host overhead (module doc)."""
    average = statistics.fmean if estimator == "mean" else statistics.median
    overhead = [0.0] * ranks
    for r in range(ranks):
        own = [g.gap for g in gaps if g.rank == r and g.waited is None]
        overhead[r] = average(own) if own else 0.0
    latency = 0.0
    split = None
    for _ in range(MAX_SPLITS):
        waited = tuple(g.waited is not None and g.ahead + latency > overhead[g.rank] for g in gaps)
        if waited == split:
            break
        split = waited
        waits = [g.waited for g, w in zip(gaps, waited) if w]
        latency = max(average(waits), 0.0) if waits else 0.0
        for r in range(ranks):
            own = [g.gap for g, w in zip(gaps, waited) if g.rank == r and not w]
            overhead[r] = average(own) if own else 0.0
    waits = [g.waited for g, w in zip(gaps, split) if w]
    per_rank = [[g.gap for g, w in zip(gaps, split) if g.rank == r and not w] for r in range(ranks)]
    return waits, per_rank


def _producer(op: Op, ends: dict, last: int) -> Op | None:
    """The op on the previous stage (forward) or the next one (backward) this op needs."""
    if op.kind == Kind.F:
        return ends.get((op.stage - 1, op.microbatch, Kind.F)) if op.stage > 0 else None
    if op.kind in (Kind.B, Kind.BW) and op.stage < last:
        nxt = (op.stage + 1, op.microbatch)
        return ends.get((*nxt, Kind.B)) or ends.get((*nxt, Kind.BW))
    return None
