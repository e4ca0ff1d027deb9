"""The raster overview: devices × time bins, each cell the class filling most of it, at any number of ops."""

from __future__ import annotations

import numpy as np

from ..api import Run
from ..ir import KINDS
from .encoding import Figure, figure
from .gantt import iteration_trace, optimizer_trace
from .style import (
    GRID,
    IDLE_COLOR,
    KIND_COLORS,
    LEGEND,
    MARGIN,
    PAIR_COLOR,
    device_axis,
    gantt_height,
    run_title,
    scaled,
    time_title,
    unit_suffix,
    window_range,
)

OVERVIEW_CLASSES = ("idle", *(k.value for k in KINDS), "overlapped")
# About one time bin per pixel of the page's plot (~770 px at 1280 wide): 1,500 bins squeezed into
# it were resampled by the browser into a moiré of stripes.
OVERVIEW_BINS = 760
OVERVIEW_COLORS = (IDLE_COLOR, *(KIND_COLORS[k] for k in KINDS), PAIR_COLOR)


def occupancy(run: Run, bins: int, window: tuple[float, float] | None = None) -> tuple[np.ndarray, float, float]:
    """Time each device spends in each class within each of ``bins`` equal time bins.

    The bins cover the whole run, or the time ``window`` (t0, t1). Returns ``(occ, t0, width)``:
    ``occ[device, class, bin]`` as a fraction of the bin (classes as in ``OVERVIEW_CLASSES``, idle
    included), the first edge and the bin width. Each slot adds its two partial end bins directly
    and its whole bins through a difference array, so the cost is linear in slots plus bins.
    """
    if bins < 1:
        raise ValueError(f"an overview needs at least one time bin (got {bins})")
    r = run.result
    p, n_cls = run.schedule.devices, len(OVERVIEW_CLASSES)
    t0, t1 = window_range(run, window)
    width = (t1 - t0) / bins
    cls = np.zeros(len(r.slot_start), dtype=np.int64)
    cls[r.slot] = r.kind + 1
    cls[r.slot[r.paired]] = n_cls - 1
    a = np.clip((r.slot_start - t0) / width, 0, bins)
    b = np.clip((r.slot_end - t0) / width, 0, bins)
    ia = np.minimum(np.floor(a).astype(np.int64), bins - 1)
    ib = np.minimum(np.floor(b).astype(np.int64), bins - 1)
    row = (r.slot_device.astype(np.int64) * n_cls + cls) * (bins + 1)  # narrow ints: widen first
    size = p * n_cls * (bins + 1)
    one = ia == ib
    many = ~one
    part = np.zeros(size)
    part += np.bincount(row[one] + ia[one], weights=(b - a)[one], minlength=size)
    part += np.bincount(row[many] + ia[many], weights=(ia + 1 - a)[many], minlength=size)
    part += np.bincount(row[many] + ib[many], weights=(b - ib)[many], minlength=size)
    whole = np.bincount(row[many] + ia[many] + 1, minlength=size) - np.bincount(row[many] + ib[many], minlength=size)
    occ = (part + np.cumsum(whole.reshape(-1, bins + 1), axis=1).ravel()).reshape(p, n_cls, bins + 1)[:, :, :bins]
    occ[:, 0, :] = np.clip(1.0 - occ[:, 1:, :].sum(axis=1), 0.0, 1.0)
    return occ, t0, width


def heat_trace(
    run: Run,
    bins: int,
    *,
    xaxis: str = "x",
    yaxis: str = "y",
    showscale: bool = True,
    window: tuple[float, float] | None = None,
    scale: float = 1.0,
    unit: str = "",
) -> dict:
    occ, t0, width = occupancy(run, bins, window)
    t0, width = t0 * scale, width * scale
    top = occ.argmax(axis=1)
    present = [i for i in range(len(OVERVIEW_CLASSES)) if (top == i).any()]  # the colour bar names only these
    index = np.zeros(len(OVERVIEW_CLASSES), dtype=np.int8)
    index[present] = np.arange(len(present))
    n_cls = len(present)
    steps = []
    for i, c in enumerate(present):
        steps += [[i / n_cls, OVERVIEW_COLORS[c]], [(i + 1) / n_cls, OVERVIEW_COLORS[c]]]  # one flat step each
    names = [OVERVIEW_CLASSES[c] for c in present]
    return dict(
        type="heatmap",
        z=index[top],
        x0=t0 + width / 2,
        dx=width,
        y0=0,
        dy=1,
        zmin=-0.5,
        zmax=n_cls - 0.5,
        colorscale=steps,
        customdata=np.rint(100 * (1.0 - occ[:, 0, :])).astype(np.uint8),
        showscale=showscale,
        colorbar=dict(tickmode="array", tickvals=list(range(n_cls)), ticktext=names, thickness=12),
        hovertemplate=f"device %{{y}} · t %{{x:.6~g}}{unit_suffix(unit)}<br>busy %{{customdata}}%<extra></extra>",
        xaxis=xaxis,
        yaxis=yaxis,
    )


def overview(
    run: Run,
    *,
    bins: int | None = None,
    window: tuple[float, float] | None = None,
    note: str = "",
    time_scale: float = 1.0,
    time_unit: str = "",
    height: int | None = None,
) -> Figure:
    """Raster of devices × time bins, each cell the class (kind, overlapped or idle) filling most of it.

    Its size depends on devices × bins only, so it draws in a moment at any number of ops. With
    ``window`` (t0, t1) the bins cover that time range only, so a zoomed-in view gets finer
    cells. ``note`` is appended to the title (the page says how to get bars).
    """
    p = run.schedule.devices
    layout = dict(
        title=dict(text=run_title(run, None) + " · overview" + note, x=0, xanchor="left", font=dict(size=14)),
        height=height or gantt_height(p),
        margin=MARGIN,
        xaxis=dict(
            title=time_title(time_unit),
            range=scaled(window_range(run, window), time_scale),
            zeroline=False,
            gridcolor=GRID,
        ),
        yaxis=device_axis(p, height),
        plot_bgcolor="white",
    )
    ends = iteration_trace(run, time_scale, time_unit)
    step = optimizer_trace(run, time_scale, time_unit, window)
    if ends or step:
        layout["legend"] = LEGEND
    heat = heat_trace(run, OVERVIEW_BINS if bins is None else bins, window=window, scale=time_scale, unit=time_unit)
    return figure([heat] + ([step] if step else []) + ([ends] if ends else []), layout)
