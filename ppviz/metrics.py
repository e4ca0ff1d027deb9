"""The numbers that decide a schedule: makespan, spans, busy time, bubble, peak memory."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import memory
from .simulator import Result


@dataclass(frozen=True)
class Metrics:
    makespan: float  # first start to last end over all devices
    span: list[float]  # per device, its first start to its last end (zero-bubble papers' measure)
    busy: list[float]  # per device, time spent computing (an overlapped pair counts once)
    bubble_fraction: float  # 1 - sum(busy) / (devices * makespan)
    span_bubble_fraction: float  # 1 - busy / span on the device with the longest span
    peak_activation: list[float]  # per device, in activation units
    chunks: list[int]  # model chunks held per device
    parameters: list[float]  # parameter memory per device, in device shares
    formula_makespan: float | None = None  # closed form (latency 0, uniform stages), if known
    formula_bubble_fraction: float | None = None


def makespan_of(result: Result) -> float:
    """First start to last end over all devices, without the rest of ``compute`` (its memory curves)."""
    if len(result.slot_start) == 0:
        raise ValueError("the schedule has no actions to measure")
    return float(result.slot_end.max() - result.slot_start.min())


def compute(result: Result, formula_makespan: float | None = None) -> Metrics:
    sched = result.schedule
    p = sched.devices
    dev = result.slot_device
    if len(result.slot_start) == 0:
        raise ValueError("the schedule has no actions to measure")
    busy = np.bincount(dev, weights=result.slot_end - result.slot_start, minlength=p)
    first, last, active = _device_extent(result)
    span = np.zeros(p)
    span[active] = last - first
    makespan = float(last.max() - first.min())
    total = float(busy.sum())
    bubble = 1.0 - total / (p * makespan) if makespan > 0 else 0.0
    longest = int(np.argmax(span))
    span_bubble = 1.0 - busy[longest] / span[longest] if span[longest] > 0 else 0.0
    static = memory.static(result)
    formula_bubble = None
    if formula_makespan is not None and formula_makespan > 0:
        formula_bubble = 1.0 - total / (p * formula_makespan)
    return Metrics(
        makespan=makespan,
        span=_clean(span),
        busy=_clean(busy),
        bubble_fraction=_round(bubble),
        span_bubble_fraction=_round(span_bubble),
        peak_activation=_clean(memory.peak(result)),
        chunks=static.chunks,
        parameters=static.parameters,
        formula_makespan=formula_makespan,
        formula_bubble_fraction=None if formula_bubble is None else _round(formula_bubble),
    )


def _device_extent(result: Result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First start and last end of each device that runs anything, and which devices do.

    Slots are numbered device by device, so each device's slots are one run of the columns."""
    bounds = np.searchsorted(result.slot_device, np.arange(result.schedule.devices + 1))
    active = bounds[1:] > bounds[:-1]
    lo = bounds[:-1][active]
    return np.minimum.reduceat(result.slot_start, lo), np.maximum.reduceat(result.slot_end, lo), active


def _round(x: float) -> float:
    return float(round(x, 12)) + 0.0


def _clean(a: np.ndarray) -> list[float]:
    return [_round(v) for v in a.tolist()]
