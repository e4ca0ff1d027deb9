"""Iterations and batch sizing: how many microbatches a run has, and where its iterations end.

A schedule that runs k iterations numbers its microbatches k·m + j (iteration k, microbatch j of
m), so an op's iteration is its microbatch // m. Schedules with a flush start an iteration only
after every stage's last backward of the one before; those without (PipeDream-2BW) overlap them.
"""

from __future__ import annotations

import numpy as np

from .ir import KIND_INDEX, Kind, Schedule
from .simulator import Result


def microbatches_for_batch(global_batch: int, micro_batch: int) -> int:
    """The pipeline's microbatch count for a global batch split into micro-batches of one size."""
    for name, v in (("global batch", global_batch), ("micro-batch size", micro_batch)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a whole number ≥ 1 (got {v!r})")
    if global_batch % micro_batch:
        raise ValueError(
            f"global batch {global_batch} is not a multiple of micro-batch size {micro_batch}: "
            f"choose sizes that divide (e.g. global batch {global_batch // micro_batch * micro_batch or micro_batch})"
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
