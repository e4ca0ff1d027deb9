"""Activation memory over time and static (parameter) memory per device.

Unit: one microbatch's activation through one device share of the model. A forward of a chunk
(a stage of a schedule with S stages on p devices) adds p/S at its start; BW frees it at its end;
B frees the fraction ``Costs.b_frees`` and W frees the rest, each at its end. At equal times
frees come before adds, so a device that swaps one microbatch for the next does not count both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ir import KIND_INDEX, Kind
from .simulator import Result

_F, _B, _W, _BW = (KIND_INDEX[k] for k in (Kind.F, Kind.B, Kind.W, Kind.BW))


@dataclass(frozen=True, eq=False)
class MemoryCurves:
    """Step curves: on device d, memory is ``values[d][i]`` from ``times[d][i]`` on."""

    times: list[np.ndarray]
    values: list[np.ndarray]
    peak: np.ndarray  # per device
    peak_time: np.ndarray  # per device, first time the peak is reached


def activation(result: Result, stage_sizes: np.ndarray | None = None) -> MemoryCurves:
    """Activation curve and peak of every device.

    ``stage_sizes`` gives each stage's activation for one microbatch in any unit (the estimate
    layer gives bytes); by default every stage holds p/S device shares.
    """
    sched = result.schedule
    if stage_sizes is None:
        unit = sched.devices / sched.stages
    else:
        sizes = np.asarray(stage_sizes, dtype=float)
        if sizes.shape != (sched.stages,):
            raise ValueError(f"stage_sizes needs one size per stage ({sched.stages}), got shape {sizes.shape}")
        unit = sizes[result.stage]
    frees_b = result.costs.b_frees
    kind = result.kind
    unit = np.broadcast_to(unit, kind.shape)
    delta = np.zeros(len(result), dtype=float)
    for k, sign in ((_F, 1.0), (_BW, -1.0), (_B, -frees_b), (_W, -(1.0 - frees_b))):
        mask = kind == k
        delta[mask] = sign * unit[mask]
    is_add = kind == _F
    time = np.where(is_add, result.start, result.end)
    order = np.lexsort((is_add, time, result.device))
    dev = result.device[order]
    t = time[order]
    level = np.cumsum(delta[order])
    level = np.round(level, 9) + 0.0  # exact sums of p/S units; drop float dust and -0.0
    times, values = [], []
    peak = np.zeros(sched.devices)
    peak_time = np.zeros(sched.devices)
    bounds = np.searchsorted(dev, np.arange(sched.devices + 1))
    for d in range(sched.devices):
        lo, hi = bounds[d], bounds[d + 1]
        tt, vv = t[lo:hi], level[lo:hi]
        # several events at one instant: keep the level after the last of them
        keep = np.append(tt[1:] != tt[:-1], True) if len(tt) else np.zeros(0, bool)
        tt, vv = np.concatenate(([0.0], tt[keep])), np.concatenate(([0.0], vv[keep]))
        times.append(tt)
        values.append(vv)
        i = int(np.argmax(vv))
        peak[d], peak_time[d] = vv[i], tt[i]
    return MemoryCurves(times, values, peak, peak_time)


@dataclass(frozen=True)
class StaticMemory:
    """Per device: model chunks held and parameter memory in device shares (1 = 1/p of the model)."""

    chunks: list[int]
    parameters: list[float]


def static(result: Result) -> StaticMemory:
    sched = result.schedule
    share = sched.devices / sched.stages
    held = sched.placement.held()
    seen = np.zeros((len(sched.placement.devices_of), sched.stages), dtype=bool)
    seen[_dirs(result), result.stage] = True  # an array pass, not a set of one tuple per action
    used = set(map(tuple, np.argwhere(seen).tolist()))
    chunks = [sum(1 for h in hs if h in used) for hs in held]
    # Directions that carry no microbatch hold no weights; DualPipe's two pipes both count.
    params = [round(c * share * sched.param_versions, 9) for c in chunks]
    return StaticMemory(chunks, params)


def _dirs(result: Result) -> np.ndarray:
    sched = result.schedule
    if sched.directions is None:
        return np.zeros(len(result), dtype=np.int64)
    return np.asarray(sched.directions, dtype=np.int64)[result.microbatch]
