"""What-if: a measured run's fitted costs under another schedule, as one `ppviz simulate` command.

The fitted per-stage times become per device-share times (``--stage-time SHARE:F,B,W``, share i the
i-th 1/p of the model): share i takes the summed times of the measured stages s with ⌊s·p/S⌋ = i, and
a schedule of S' stages runs each of its stages at its share's times × p/S' (``ppviz.costs``). Times
are written in ms, so the simulated makespan reads in ms. A backward that was not split (``w_s``
null) goes whole into B and W is 0: a zero-bubble schedule then has no W to move, as its run would.
Each rank's fitted host overhead goes with it (``--host-overhead``, one per device): the what-if runs
on the run's own ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import api
from ..errors import InputError
from ..schedules import REGISTRY
from .fit import Fit

MS = 1e3


@dataclass(frozen=True)
class WhatIf:
    schedule: str
    command: str
    makespan_s: float
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"schedule": self.schedule, "command": self.command, "makespan_s": self.makespan_s,
                "notes": list(self.notes)}  # fmt: skip


def share_times(fit: Fit, devices: int) -> dict[int, tuple[float, float, float]]:
    """Per device share, the summed fitted (f, b, w) of the measured stages it covers, in seconds."""
    stages = len(fit.stages)
    out = {i: [0.0, 0.0, 0.0] for i in range(devices)}
    for st in fit.stages:
        share = out[st.stage * devices // stages]
        for k, spread in enumerate((st.f, st.b, st.w)):
            share[k] += 0.0 if spread is None else spread.time
    return {i: (f, b, w) for i, (f, b, w) in out.items()}


def host_overhead_ms(fit: Fit) -> tuple[float, ...]:
    """Each rank's fitted host overhead in ms, as the command writes it (6 significant digits)."""
    return tuple(float(f"{t * MS:.6g}") for t in fit.host_overhead_s)


def what_if(fit: Fit, schedule: str, devices: int, microbatches: int) -> WhatIf:
    """The fitted costs under ``schedule`` on the same devices and microbatches: its command and makespan."""
    if schedule not in REGISTRY:
        raise InputError(f"unknown schedule {schedule!r}: see `ppviz list`", field="what_if")
    shares = share_times(fit, devices)
    p2p = 0.0 if fit.p2p is None else fit.p2p.time
    gaps = host_overhead_ms(fit)
    flags = [f"--devices {devices}", f"--microbatches {microbatches}", f"--p2p {p2p * MS:.6g}"]
    flags += [f"--stage-time {i}:{f * MS:.6g},{b * MS:.6g},{w * MS:.6g}" for i, (f, b, w) in shares.items()]
    if any(gaps):
        flags.append("--host-overhead " + ",".join(f"{g:.6g}" for g in gaps))
    exact = {i: tuple(float(f"{t * MS:.6g}") for t in times) for i, times in shares.items()}
    run = api.simulate(schedule, devices, microbatches, p2p=float(f"{p2p * MS:.6g}"), stage_times=exact,
                       host_overhead=gaps if any(gaps) else ())  # fmt: skip
    notes = []
    if any(st.w is None for st in fit.stages):
        notes.append("the measured backward is not split: all of it is B and W is 0")
    if fit.cores is not None:
        notes.append(f"the run's ranks time-shared {fit.cores} cores; the fitted times are each op's own work, so "
                     "this runs every rank on a device of its own")  # fmt: skip
    return WhatIf(schedule, f"ppviz simulate {schedule} " + " ".join(flags), run.metrics.makespan / MS, tuple(notes))
