"""The public entry points: build a schedule, simulate it, and summarise it as the CLI contract."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import metrics as _metrics
from . import schedules
from .costs import Costs
from .ir import Schedule
from .simulator import Result
from .simulator import simulate as _simulate


@dataclass(frozen=True, eq=False)
class Run:
    """A simulated schedule with its metrics."""

    result: Result
    metrics: _metrics.Metrics

    @property
    def schedule(self) -> Schedule:
        return self.result.schedule

    @property
    def costs(self) -> Costs:
        return self.result.costs

    def summary(self) -> dict:
        """The contract fields, without the ops."""
        s, m = self.schedule, self.metrics
        return {
            "schedule": s.name,
            "devices": s.devices,
            "stages": s.stages,
            "microbatches": s.microbatches,
            "chunks": s.placement.chunks,
            "makespan": m.makespan,
            "span": m.span,
            "busy": m.busy,
            "bubble_fraction": m.bubble_fraction,
            "span_bubble_fraction": m.span_bubble_fraction,
            "peak_activation": m.peak_activation,
            "parameters": m.parameters,
            "formula_makespan": m.formula_makespan,
            "formula_bubble_fraction": m.formula_bubble_fraction,
            "params": {k: v for k, v in s.params.items() if k != "microbatches"},
            "costs": self.costs.as_dict(),
        }

    def to_dict(self) -> dict:
        return {**self.summary(), "ops": self.result.ops()}


def make_costs(
    f: float = 1.0,
    b: float = 1.0,
    w: float = 1.0,
    p2p: float = 0.0,
    overlap: float = 1.0,
    b_frees: float = 0.0,
    stage_times: Mapping[int, Sequence[float]] | None = None,
    exact_stage_times: Sequence[Sequence[float]] = (),
    host_overhead: Sequence[float] = (),
) -> Costs:
    """The cost inputs; ``stage_times`` keys are device shares (see ``ppviz.costs``)."""
    return Costs(
        f, b, w, p2p, overlap, b_frees, dict(stage_times or {}), exact_stage_times, host_overhead=tuple(host_overhead)
    )


def evaluate(schedule: Schedule, costs: Costs | None = None) -> Run:
    """Simulate any schedule (generated or imported) and measure it."""
    costs = costs or Costs()
    costs.check_fits(schedule.stages, schedule.devices)
    result = _simulate(schedule, costs)
    return Run(result, _metrics.compute(result, schedules.formula(schedule, costs)))


def simulate(
    name: str,
    devices: int,
    microbatches: int,
    *,
    f: float = 1.0,
    b: float = 1.0,
    w: float = 1.0,
    p2p: float = 0.0,
    overlap: float = 1.0,
    b_frees: float = 0.0,
    stage_times: Mapping[int, Sequence[float]] | None = None,
    host_overhead: Sequence[float] = (),
    **params,
) -> Run:
    """Generate the named schedule and simulate it under the cost convention.

    Raises ValueError with a message saying what to change when an input is invalid.
    """
    costs = make_costs(f, b, w, p2p, overlap, b_frees, stage_times, host_overhead=host_overhead)
    schedule = schedules.build(name, devices, microbatches, costs=costs, **params)
    return evaluate(schedule, costs)
