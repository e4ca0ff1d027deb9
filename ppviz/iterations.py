"""Iterations and batch sizing: how many microbatches a run has, and where its iterations end.

A schedule that runs k iterations numbers its microbatches k·m + j (iteration k, microbatch j of
m), so an op's iteration is its microbatch // m. Schedules with a flush start an iteration only
after every stage's last backward of the one before; those without (PipeDream-2BW) overlap them.

Between two iterations each device runs its optimizer step (``Costs.optimizer_step``, real units)
right after its last backward op of the earlier one: with a flush the next iteration's first
forward thus waits for the flush and the step; without one (2BW) the step sits where that device
switches weight version. The last iteration's step is not part of the run (the estimate adds it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .errors import InputError
from .ir import KIND_INDEX, Kind, Schedule

if TYPE_CHECKING:  # the simulator imports this module
    from .simulator import Result

_F = KIND_INDEX[Kind.F]


def microbatches_for_batch(global_batch: int, micro_batch: int) -> int:
    """The pipeline's microbatch count for a global batch split into micro-batches of one size."""
    for name, field, v in (("global batch", "gbs", global_batch), ("micro-batch size", "mbs", micro_batch)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a whole number ≥ 1 (got {v!r})", field=field)
    if global_batch % micro_batch:
        raise InputError(
            field="gbs",
            message=f"global batch {global_batch} is not a multiple of micro-batch size {micro_batch}: "
            f"choose sizes that divide (e.g. global batch {global_batch // micro_batch * micro_batch or micro_batch})",
        )
    return global_batch // micro_batch


def iterations(schedule: Schedule) -> tuple[int, int]:
    """(iterations, microbatches per iteration) of a generated schedule; (1, m) otherwise."""
    k = int(schedule.params.get("iterations") or 1)
    if k < 1 or schedule.microbatches % k:
        return 1, schedule.microbatches
    return k, schedule.microbatches // k


def iteration_ends(result: Result) -> np.ndarray:
    """``[iteration, device]``: when each device ends its last backward op of each iteration.

    With a flush the optimizer step sits after the largest of these per iteration (the next
    iteration's first forward starts there); without one (2BW) each device switches weight version
    at its own end. Devices with no backward work in an iteration get NaN.
    """
    k, m = iterations(result.schedule)
    backward = result.kind != KIND_INDEX[Kind.F]
    out = np.full((k, result.schedule.devices), -np.inf)
    np.maximum.at(out, (result.microbatch[backward] // m, result.device[backward]), result.end[backward])
    out[np.isinf(out)] = np.nan
    return out


def step_slots(schedule: Schedule, device: np.ndarray, microbatch: np.ndarray, kind: np.ndarray, slot: np.ndarray):
    """``[iteration, device]`` for iterations 0..k−2: the slot after which the device runs its optimizer
    step (its last backward slot of that iteration), −1 where it has none. Columns as in ``Result``."""
    k, m = iterations(schedule)
    out = np.full((max(k - 1, 0), schedule.devices), -1, dtype=np.int64)
    if k < 2:
        return out
    backward = kind != _F
    it = microbatch[backward] // m
    early = it < k - 1
    np.maximum.at(out, (it[early], device[backward][early]), slot[backward][early])
    return out


class OptimizerSteps(NamedTuple):
    """One row per optimizer step placed inside a run: its device, the iteration it ends, start, end."""

    device: np.ndarray
    iteration: np.ndarray
    start: np.ndarray
    end: np.ndarray


def optimizer_steps(result: Result) -> OptimizerSteps:
    """The steps the simulator placed between iterations (none in the abstract view, where they take 0).

    Each starts when its device ends the slot it follows (the device is then free and the step
    waits for nothing else), so these are the simulator's own times.
    """
    times = result.costs.optimizer_step
    r = result
    slots = step_slots(r.schedule, r.device, r.microbatch, r.kind, r.slot) if any(times) else np.empty((0, 0))
    it, dev = np.nonzero(slots >= 0)
    dur = np.asarray(times, dtype=float)[dev] if len(dev) else np.zeros(0)
    keep = dur > 0
    it, dev, dur = it[keep], dev[keep], dur[keep]
    start = r.slot_end[slots[it, dev]] if len(dev) else np.zeros(0)
    return OptimizerSteps(dev, it, start, start + dur)
