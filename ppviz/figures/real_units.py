"""Charts of real-unit runs: the layouts' time against memory, peaks side by side, and the
keyword arguments that draw an ``Estimate`` (``ppviz.estimate``) in ms and GiB, and an estimate's
memory by what holds it."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from ..units import GIB
from .encoding import Figure, figure
from .style import GRID, LEGEND, MARGIN

BREAKDOWN_COLORS = ("#0072B2", "#56B4E9", "#CC79A7", "#BBBBBB", "#E69F00", "#009E73", "#D55E00", "#F0E442")


def tradeoff(
    x: Sequence[float],
    y: Sequence[float],
    *,
    labels: Sequence[str],
    front: Sequence[bool],
    capacity: float | None = None,
    x_unit: str = "s",
    y_unit: str = "GiB",
    title: str | None = None,
) -> Figure:
    """Iteration time (x) against peak memory (y), one point per layout, the Pareto front joined
    and marked, and the capacity as a line. Values are drawn as given (already in their units)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    on = np.asarray(front, dtype=bool)
    tip = "%{text}<br>iteration %{x:.4~g} " + x_unit + "<br>peak %{y:.4~g} " + y_unit + "<extra></extra>"
    data = [
        dict(
            type="scatter",
            mode="markers",
            name="layouts",
            x=xs[~on],
            y=ys[~on],
            text=[labels[i] for i in np.flatnonzero(~on)],
            marker=dict(color="#56B4E9", size=7, opacity=0.7),
            hovertemplate=tip,
        )
    ]
    order = np.flatnonzero(on)[np.argsort(xs[on], kind="stable")]
    data.append(
        dict(
            type="scatter",
            mode="lines+markers",
            name="Pareto front",
            x=xs[order],
            y=ys[order],
            text=[labels[i] for i in order],
            line=dict(shape="hv", color="#D55E00", width=1.5),
            marker=dict(color="#D55E00", size=10, symbol="diamond", line=dict(width=1, color="#333333")),
            hovertemplate=tip,
        )
    )
    if capacity is not None:
        lo = float(xs.min()) if len(xs) else 0.0
        hi = float(xs.max()) if len(xs) else 1.0
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"usable {capacity:.4g} {y_unit}",
                x=[lo, hi if hi > lo else lo + 1.0],
                y=[capacity, capacity],
                line=dict(color="#7A0000", dash="dot", width=2),
                hovertemplate=f"usable HBM {capacity:.4g} {y_unit}: the capacity less the reserve and any headroom"
                "<extra></extra>",
            )
        )
    layout = dict(
        title=dict(text=title or "iteration time against peak memory", x=0, xanchor="left", font=dict(size=14)),
        height=360,
        margin=dict(MARGIN, t=75),
        legend=LEGEND,
        xaxis=dict(title=dict(text=f"iteration time ({x_unit})"), gridcolor=GRID),
        yaxis=dict(title=dict(text=f"peak memory ({y_unit})"), gridcolor=GRID, rangemode="tozero"),
        plot_bgcolor="white",
        hovermode="closest",
    )
    return figure(data, layout)


def peaks(
    rows: dict[str, Sequence[float]],
    *,
    capacity: float | None = None,
    usable: float | None = None,
    unit: str = "GiB",
    title: str | None = None,
) -> Figure:
    """Each device's peak memory, one bar group per device and one bar per row (e.g. per schedule),
    with the capacity (and the usable part of it, less the reserve) as lines: several schedules' memory
    side by side, in the same unit."""
    data = []
    widest = max((len(v) for v in rows.values()), default=1)
    for i, (label, values) in enumerate(rows.items()):
        data.append(
            dict(
                type="bar",
                name=label,
                x=np.arange(len(values)),
                y=np.asarray(values, dtype=float),
                marker=dict(color=BREAKDOWN_COLORS[i % len(BREAKDOWN_COLORS)]),
                hovertemplate=f"{html.escape(label)}<br>device %{{x}}: %{{y:.4~g}} {unit}<extra></extra>",
            )
        )
    for label, level, dash in (("capacity", capacity, "dot"), ("usable", usable, "dash")):
        if level is not None:
            text = f"{label} {level:,.2f} {unit}"
            data.append(_level_line(text, text, level, widest, dash))
    layout = dict(
        title=dict(text=title or f"peak memory per device ({unit})", x=0, xanchor="left", font=dict(size=14)),
        barmode="group",
        height=300,
        margin=dict(MARGIN, t=75),
        legend=LEGEND,
        xaxis=dict(title=dict(text="device"), tickmode="linear", dtick=1 if widest <= 32 else None, gridcolor=GRID),
        yaxis=dict(title=dict(text=f"peak memory ({unit})"), rangemode="tozero", gridcolor=GRID),
        plot_bgcolor="white",
    )
    return figure(data, layout)


# --- an estimate's units -------------------------------------------------------------------


def gantt_kwargs(est) -> dict:
    """Keyword arguments of ``gantt`` / ``overview`` / ``compare`` / ``memory`` / ``to_html`` for an
    estimate's run (timed in seconds) in ms."""
    return {"time_scale": 1e3, "time_unit": "ms"}


def memory_kwargs(est) -> dict:
    """Keyword arguments of ``memory`` (with ``gantt_kwargs`` for its time axis) for an estimate:
    each stage's activation bytes, each device's static bytes as the base of its curve, GiB on the
    axis, the HBM capacity line and the reserve band under it."""
    st = est.static_bytes
    return {
        "stage_sizes": est.plan.activation_bytes.tolist(),
        "base": (st["weight"] + st["grad"] + st["optimizer"]).tolist(),
        "scale": 1 / GIB,
        "unit": "GiB",
        "capacity": est.capacity_bytes,
        "reserve": est.reserve_bytes,
    }


MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "reserve")
MEMORY_COLORS = dict(zip(MEMORY_PARTS, ("#0072B2", "#56B4E9", "#E69F00", "#009E73", "#7A0000")))


def memory_breakdown(est, *, title: str | None = None, height: int = 300) -> Figure:
    """Each device's memory as a stacked bar in GiB (weights, gradients, optimizer state, peak
    activations, the reserve) against the HBM capacity line: what to shrink when a layout does not fit."""
    p = len(est.peak_bytes)
    parts = [est.memory_breakdown(d) for d in range(p)]
    x = np.arange(p)
    data = []
    for name in MEMORY_PARTS:
        y = np.array([part[name] for part in parts]) / GIB
        data.append(
            dict(
                type="bar",
                name=name,
                x=x,
                y=y,
                marker=dict(color=MEMORY_COLORS[name], opacity=0.35 if name == "reserve" else 1.0),
                hovertemplate=f"device %{{x}} {name}: %{{y:,.2f}} GiB<extra></extra>",
            )
        )
    cap = est.capacity_bytes / GIB
    data.append(_level_line(f"HBM {cap:,.2f} GiB", f"HBM capacity {cap:,.2f} GiB", cap, p, "dot"))
    d = est.fullest_device
    verdict = "fits" if est.fits else f"over by {est.over_bytes / GIB:,.2f} GiB"
    layout = dict(
        title=dict(
            text=title or f"memory per device (GiB): device {d} the fullest, {verdict}",
            x=0,
            xanchor="left",
            font=dict(size=14),
        ),
        barmode="stack",
        height=height,
        margin=dict(MARGIN, t=75),
        legend=LEGEND,
        xaxis=dict(title=dict(text="device"), tickmode="linear", dtick=1 if p <= 32 else None, gridcolor=GRID),
        yaxis=dict(title=dict(text="memory (GiB)"), rangemode="tozero", gridcolor=GRID),
        plot_bgcolor="white",
    )
    return figure(data, layout)


def _level_line(name: str, hover: str, level: float, bars: int, dash: str) -> dict:
    """A memory level (the HBM, what is usable) across ``bars`` device bars."""
    return dict(
        type="scatter",
        mode="lines",
        name=name,
        x=[-0.5, bars - 0.5],
        y=[level, level],
        line=dict(color="#7A0000", dash=dash, width=2),
        hovertemplate=f"{hover}<extra></extra>",
    )
