"""Each rank's step end, as torch's pipelining runtime has it: the later of its last op's end and the
moment its last send is received.

``schedule.step`` waits for the sends it posted (GPipe, 1F1B and the runtime all do), and a gloo send
completes only when the peer takes it. GPipe posts a receive right before the op that needs the data,
so a send is received when that consumer op starts; the runtime posts it one op earlier, which in the
simulation changes nothing (a consumer that waited starts when the data arrives; docs/measured.md).
"""

from __future__ import annotations

import numpy as np

from ..simulator import Result, dependencies
from .run import MeasuredRun


def simulated_step_ends(result: Result) -> tuple[float, ...]:
    """Per device, from the simulation's first start: max(its last op's end, the start of every op on
    another device that consumes one of its outputs)."""
    t0 = float(result.start.min())
    ends = np.full(result.schedule.devices, -np.inf)
    np.maximum.at(ends, result.device, result.end)
    producer = dependencies(result)
    sent = producer >= 0
    sent[sent] = result.device[producer[sent]] != result.device[sent]
    np.maximum.at(ends, result.device[producer[sent]], result.start[sent])
    return tuple(float(e) - t0 for e in ends)


def measured_step_ends(run: MeasuredRun) -> tuple[float, ...]:
    """Per rank, from the run's first op: the end of its last op or of its last communication event
    (a send the step waited on ends when it was received)."""
    start = min(op.start for row in run.ops for op in row)
    ends = [max(op.end for op in row) if row else start for row in run.ops]
    for c in run.comms:
        if c.end is not None:
            ends[c.rank] = max(ends[c.rank], c.end)
    return tuple(e - start for e in ends)
