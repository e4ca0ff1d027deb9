"""Activation memory over time and static (parameter) memory per device.

Unit: one microbatch's activation through one device share of the model. A forward of a chunk
(a stage of a schedule with S stages on p devices) adds p/S at its start; BW frees it at its end;
B frees the fraction ``Costs.b_frees`` and W frees the rest, each at its end. At equal times
frees come before adds, so a device that swaps one microbatch for the next does not count both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ir import KIND_INDEX, KINDS, Kind
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
    times, values = [], []
    peak = np.zeros(result.schedule.devices)
    peak_time = np.zeros(result.schedule.devices)
    for d, t, level in _levels(result, stage_sizes):
        tt, vv = _steps(t, level)
        times.append(tt)
        values.append(vv)
        i = int(np.argmax(vv))
        peak[d], peak_time[d] = vv[i], tt[i]
    return MemoryCurves(times, values, peak, peak_time)


def peak(result: Result, stage_sizes: np.ndarray | None = None) -> np.ndarray:
    """Per device, ``activation(...).peak`` without keeping the curves (metrics need only this)."""
    out = np.zeros(result.schedule.devices)
    for d, t, level in _levels(result, stage_sizes):
        out[d] = _steps(t, level)[1].max()
    return out


def _steps(t: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curve from 0: at several events at one instant, the level after the last of them."""
    keep = np.append(t[1:] != t[:-1], True) if len(t) else np.zeros(0, bool)
    return np.concatenate(([0.0], t[keep])), np.concatenate(([0.0], level[keep]))


def _levels(result: Result, stage_sizes: np.ndarray | None):
    """Per device: its event times in order (adds at a start, frees at an end; frees first at equal
    times) and the level after each. One device at a time, so the temporaries are one device's;
    the running sum carries from device to device, as one cumulative sum over all of them would."""
    sched = result.schedule
    if stage_sizes is None:
        unit = np.full(sched.stages, sched.devices / sched.stages)
    else:
        unit = np.asarray(stage_sizes, dtype=float)
        if unit.shape != (sched.stages,):
            raise ValueError(f"stage_sizes needs one size per stage ({sched.stages}), got shape {unit.shape}")
    frees_b = result.costs.b_frees
    delta = np.zeros((len(KINDS), sched.stages))  # [kind, stage] → change of level
    for k, sign in ((_F, 1.0), (_BW, -1.0), (_B, -frees_b), (_W, -(1.0 - frees_b))):
        delta[k] = sign * unit
    device = result.device
    if np.all(device[1:] >= device[:-1]):
        rows = None  # grouped by device already, as the simulator gives them
        bounds = np.searchsorted(device, np.arange(sched.devices + 1))
    else:
        rows = np.argsort(device, kind="stable")
        bounds = np.searchsorted(device[rows], np.arange(sched.devices + 1))
    carry = 0.0
    for d in range(sched.devices):
        at = slice(bounds[d], bounds[d + 1]) if rows is None else rows[bounds[d] : bounds[d + 1]]
        kind, stage = result.kind[at], result.stage[at]
        is_add = kind == _F
        time = np.where(is_add, result.start[at], result.end[at])
        order = np.lexsort((is_add, time))
        level = np.cumsum(np.concatenate(([carry], delta[kind[order], stage[order]])))[1:]
        if len(level):
            carry = level[-1]
        yield d, time[order], np.round(level, 9) + 0.0  # exact sums of p/S units; drop float dust and -0.0


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
