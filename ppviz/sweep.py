"""Sweeps: the compared schedules run again at each value of one size (m, v or p), as plain rows.

Users compare schedules across sizes ("which wins at 8 microbatches, and at 64?"), so a sweep
runs every schedule at every value of one axis, under the same costs, and returns one row per
(schedule, value). A value a schedule refuses (interleaved 1F1B needs m to be a multiple of p,
layers must split into the stages, …) gives a row with no numbers and the core's reason, never an
error: the chart draws a gap there. Abstract rows (``sweep``) are in the cost convention's units;
real-units rows (``sweep_estimate``) come from ``ppviz.estimate``, in seconds and bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from . import api
from .costs import Costs
from .schedules import REGISTRY, build

AXES = {"m": "microbatches", "v": "chunks per device", "p": "devices"}
ABSTRACT_METRICS = ("makespan", "bubble_fraction", "peak_activation")
ESTIMATE_METRICS = ("iteration_s", "bubble_s", "peak_bytes")

Guard = Callable[[str, int, int, dict], str | None]


def values_around(current: int, low: int, high: int, spread: int = 8) -> list[int]:
    """Powers of two from current/spread to current·spread, within [low, high], and ``current`` itself."""
    if not low <= current <= high:
        raise ValueError(f"the current value {current} is outside {low}–{high}")
    lo, hi = max(low, math.ceil(current / spread)), min(high, current * spread)
    powers = {2**k for k in range(0, int(math.log2(max(hi, 1))) + 1) if lo <= 2**k <= hi}
    return sorted(powers | {current})


def takes_chunks(name: str) -> bool:
    spec = REGISTRY.get(name)
    return spec is not None and spec.param("chunks") is not None


def sweep(
    names: Sequence[str],
    axis: str,
    values: Sequence[int],
    *,
    devices: int,
    microbatches: int,
    costs: Costs | None = None,
    params: Mapping[str, Mapping[str, object]] | None = None,
    guard: Guard | None = None,
    known: Mapping[tuple[str, int], api.Run] | None = None,
) -> list[dict]:
    """Makespan, bubble fraction and peak activation of each schedule at each value of ``axis``.

    ``axis`` is "m" (microbatches), "v" (the ``chunks`` parameter; a schedule without one keeps
    its own chunks, noted in the row) or "p" (devices). ``params`` are each schedule's own
    parameters, ``costs`` the op times (searching schedules search under them). ``guard``
    (name, devices, microbatches, params) may return a reason to skip a point (a caller's work
    bound); the row then carries that reason. ``known`` maps (name, value) to runs already at hand
    (e.g. the view's own), used instead of simulating them again. Rows: {schedule, value, makespan,
    bubble_fraction, peak_activation, reason, note}, ``reason`` None when the point was run.
    """
    _check_axis(axis)
    costs = costs or Costs()
    params = params or {}
    rows = []
    for name in names:
        fixed = None  # a schedule without chunks along v: run once, the same at every value
        for value in values:
            p, m = (
                (value, microbatches) if axis == "p" else (devices, value) if axis == "m" else (devices, microbatches)
            )
            own = dict(params.get(name, {}))
            note = None
            if axis == "v":
                if takes_chunks(name):
                    own["chunks"] = value
                else:
                    chunks = REGISTRY[name].chunks if name in REGISTRY else None
                    note = f"{name} takes no chunks parameter: its own {chunks or 1} at every v"
            row = {"schedule": name, "value": value, "reason": None, "note": note}
            row |= dict.fromkeys(ABSTRACT_METRICS)
            reason = guard(name, p, m, own) if guard is not None else None
            if reason is not None:
                rows.append(row | {"reason": reason})
                continue
            try:
                if known is not None and (name, value) in known:
                    run = known[(name, value)]
                elif note is not None and fixed is not None:
                    run = fixed
                else:
                    run = api.evaluate(build(name, p, m, costs=costs, **own), costs)
                    fixed = run if note is not None else None
            except ValueError as e:
                rows.append(row | {"reason": str(e)})
                continue
            metrics = run.metrics
            row.update(
                makespan=metrics.makespan,
                bubble_fraction=metrics.bubble_fraction,
                peak_activation=max(metrics.peak_activation),
            )
            rows.append(row)
    return rows


def sweep_estimate(
    names: Sequence[str],
    axis: str,
    values: Sequence[int],
    *,
    model,
    gpu,
    layout,
    layout_for: Callable[[str, object], object] | None = None,
    guard: Callable[[str, object], str | None] | None = None,
) -> list[dict]:
    """Iteration time (s), bubble (s) and peak memory (bytes) of each schedule at each value, from
    ``ppviz.estimate`` of ``layout`` with one field changed: "m" sets the global batch to
    m·dp·mbs, "v" sets vpp (schedules without chunks keep vpp 1, noted), "p" sets pp (so the GPU
    count is tp·pp·dp·cp). ``layout_for(name, layout)`` adapts the layout to a schedule (default:
    its schedule field set, vpp 1 for schedules without chunks). Rows: {schedule, value,
    iteration_s, bubble_s, peak_bytes, fits, reason, note}.
    """
    from .estimate import estimate  # the estimate layer sits above the core; imported when used

    _check_axis(axis)
    layout_for = layout_for or _layout_for
    rows = []
    seen: dict = {}  # the same layout (a schedule without chunks along v) is estimated once
    for name in names:
        for value in values:
            changed = {"m": {"gbs": value * layout.dp * layout.mbs}, "v": {"vpp": value}, "p": {"pp": value}}[axis]
            lay = layout_for(name, replace(layout, **changed))
            note = None
            if axis == "v" and not takes_chunks(name):
                note = f"{name} takes no chunks: vpp 1 at every v"
            row = {"schedule": name, "value": value, "reason": None, "note": note, "fits": None}
            row |= dict.fromkeys(ESTIMATE_METRICS)
            reason = guard(name, lay) if guard is not None else None
            if reason is not None:
                rows.append(row | {"reason": reason})
                continue
            try:
                est = seen[lay] if lay in seen else estimate(model, gpu, lay)
                seen[lay] = est
            except ValueError as e:
                rows.append(row | {"reason": str(e)})
                continue
            row.update(
                iteration_s=est.iteration_s,
                bubble_s=est.breakdown["bubble_s"],
                peak_bytes=float(est.peak_bytes.max()),
                fits=bool(est.fits),
            )
            rows.append(row)
    return rows


def _layout_for(name: str, layout):
    return replace(layout, schedule=name, vpp=layout.vpp if takes_chunks(name) else 1)


def _check_axis(axis: str) -> None:
    if axis not in AXES:
        raise ValueError(f"a sweep runs along m, v or p (got {axis!r})")
