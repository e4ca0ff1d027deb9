"""Measured against simulated: the run's own order simulated under its fitted costs, and the gap.

Idle time per rank is the makespan minus the rank's busy time. The simulated idle is what this order
implies under these costs: the rank's host overhead between its ops (fitted: the stack's) and the
rest, the schedule's bubble; what the measured run idled beyond it is the excess. Each
rank's step ends when its last send is received, if that is after its last op (``step.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import api
from ..ir import KIND_INDEX
from . import shared_cores
from .fit import Fit, Spread, fit
from .run import MeasuredRun
from .step import measured_step_ends, simulated_step_ends

LATE_OPS = 5  # the latest ops listed
ON_TIME_S = 1e-9  # later than the model by less than this is on time (float rounding of the times)


@dataclass(frozen=True)
class LateOp:
    name: str  # torch's token, e.g. 1F3
    rank: int
    measured_start_s: float
    simulated_start_s: float

    @property
    def late_s(self) -> float:
        return self.measured_start_s - self.simulated_start_s


@dataclass(frozen=True)
class Comparison:
    run: MeasuredRun
    fit: Fit
    simulated: api.Run
    measured_makespan_s: float
    measured_idle_s: tuple[float, ...]
    simulated_idle_s: tuple[float, ...]
    late_ops: tuple[LateOp, ...]
    measured_step_s: tuple[float, ...]  # per rank, from the run's first op
    simulated_step_s: tuple[float, ...]  # per rank, from the simulation's first op

    @property
    def simulated_makespan_s(self) -> float:
        return self.simulated.metrics.makespan

    @property
    def simulated_host_s(self) -> tuple[float, ...]:
        """Per rank, the simulation's time in host overhead: its overhead after each of its ops but the last."""
        gaps = self.fit.host_overhead_s
        return tuple(g * max(len(row) - 1, 0) for g, row in zip(gaps, self.run.ops))

    @property
    def bubble_s(self) -> tuple[float, ...]:
        """Per rank, the simulated idle time that is not host overhead: the schedule's bubble."""
        return tuple(i - h for i, h in zip(self.simulated_idle_s, self.simulated_host_s))

    @property
    def excess_idle_s(self) -> tuple[float, ...]:
        return tuple(m - s for m, s in zip(self.measured_idle_s, self.simulated_idle_s))


def compare(run: MeasuredRun, estimator: str = "mean", cores: int | None = None) -> Comparison:
    """``run`` fitted (``estimator``: mean or median op times, ``fit``) and simulated under the fit; with
    ``cores`` fewer than its ranks, the ranks time-share that many cores (``shared_cores``)."""
    fitted = fit(run, estimator, cores)
    sim = api.evaluate(run.schedule(), fitted.costs())
    if fitted.cores is not None:
        sim = shared_cores.simulate(sim, fitted.cores)
    start = min(op.start for row in run.ops for op in row)
    makespan = max(op.end for row in run.ops for op in row) - start
    idle = tuple(makespan - sum(op.duration for op in row) for row in run.ops)
    r = sim.result
    sim_span = sim.metrics.makespan
    sim_idle = tuple(sim_span - b for b in sim.metrics.busy)
    sim_start = {key: t - float(r.start.min()) for key, t in zip(
        zip(r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist()), r.start.tolist())}  # fmt: skip
    late = [
        LateOp(str(op.action), op.rank, op.start - start, sim_start[(op.stage, op.microbatch, KIND_INDEX[op.kind])])
        for row in run.ops
        for op in row
    ]
    late = sorted((x for x in late if x.late_s > ON_TIME_S), key=lambda x: -x.late_s)[:LATE_OPS]
    return Comparison(run, fitted, sim, makespan, idle, sim_idle, tuple(late), measured_step_ends(run),
                      simulated_step_ends(r))  # fmt: skip


def to_dict(c: Comparison) -> dict:
    """The ``ppviz measured --json`` contract (times in seconds)."""
    run = c.run
    return {
        "format": run.format,
        "ranks": run.ranks,
        "stages": run.stages,
        "microbatches": run.microbatches,
        "iteration": run.iteration,
        "sources": list(run.sources),
        "fitted": {
            "estimator": c.fit.estimator,
            "cores": c.fit.cores,
            "stage_times": [
                {
                    "stage": s.stage,
                    "f_s": _time(s.f),
                    "b_s": _time(s.b),
                    "w_s": _time(s.w),
                    "samples": {k: (0 if v is None else v.samples) for k, v in (("f", s.f), ("b", s.b), ("w", s.w))},
                    "spread_s": {k: None if v is None else [v.low, v.high] for k, v in (("f", s.f), ("b", s.b),
                                                                                         ("w", s.w))},
                    "median_s": {k: None if v is None else v.median for k, v in (("f", s.f), ("b", s.b),
                                                                                 ("w", s.w))},
                }
                for s in c.fit.stages
            ],
            "p2p_s": _time(c.fit.p2p) or 0.0,
            "p2p_samples": 0 if c.fit.p2p is None else c.fit.p2p.samples,
            "p2p_spread_s": None if c.fit.p2p is None else [c.fit.p2p.low, c.fit.p2p.high],
            "host_overhead_s": list(c.fit.host_overhead_s),
            "host_overhead_samples": [0 if h is None else h.samples for h in c.fit.host_overhead],
        },
        "measured": {"makespan_s": c.measured_makespan_s, "idle_s": list(c.measured_idle_s),
                     "step_s": list(c.measured_step_s)},
        "simulated": {"makespan_s": c.simulated_makespan_s, "idle_s": list(c.simulated_idle_s),
                      "bubble_s": list(c.bubble_s), "host_overhead_s": list(c.simulated_host_s),
                      "step_s": list(c.simulated_step_s)},
        "excess_idle_s": list(c.excess_idle_s),
        "late_ops": [
            {"op": x.name, "rank": x.rank, "measured_start_s": x.measured_start_s,
             "simulated_start_s": x.simulated_start_s, "late_s": x.late_s}
            for x in c.late_ops
        ],
        "notes": list(run.notes + c.fit.notes),
    }  # fmt: skip


def _time(s: Spread | None) -> float | None:
    return None if s is None else s.time
