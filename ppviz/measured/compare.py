"""Measured against simulated: the run's own order simulated under its fitted costs, and the gap.

Idle time per rank is the makespan minus the rank's busy time. The simulated idle is the bubble
this order implies under these costs; what the measured run idled beyond it is the excess.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import api
from .fit import Fit, fit
from .run import MeasuredRun

LATE_OPS = 5


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

    @property
    def simulated_makespan_s(self) -> float:
        return self.simulated.metrics.makespan

    @property
    def excess_idle_s(self) -> tuple[float, ...]:
        return tuple(m - s for m, s in zip(self.measured_idle_s, self.simulated_idle_s))


def compare(run: MeasuredRun) -> Comparison:
    fitted = fit(run)
    sim = api.evaluate(run.schedule(), fitted.costs())
    start = min(op.start for row in run.ops for op in row)
    makespan = max(op.end for row in run.ops for op in row) - start
    idle = tuple(makespan - sum(op.duration for op in row) for row in run.ops)
    r = sim.result
    sim_span = sim.metrics.makespan
    sim_idle = tuple(sim_span - b for b in sim.metrics.busy)
    sim_start = {key: t - float(r.start.min()) for key, t in zip(
        zip(r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist()), r.start.tolist())}  # fmt: skip
    from ..ir import KIND_INDEX

    late = [
        LateOp(str(op.action), op.rank, op.start - start, sim_start[(op.stage, op.microbatch, KIND_INDEX[op.kind])])
        for row in run.ops
        for op in row
    ]
    late.sort(key=lambda x: -x.late_s)
    return Comparison(run, fitted, sim, makespan, idle, sim_idle, tuple(x for x in late[:LATE_OPS] if x.late_s > 0))
