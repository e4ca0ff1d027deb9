"""The memory chart: each device's activation (or static + activation) over time, peaks marked."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from plotly.colors import sample_colorscale

from .. import memory as _memory
from ..api import Run
from ..ir import Kind
from .encoding import Figure, figure, int_dtype, time_dtype
from .style import GRID, KIND_COLORS, LEGEND, MARGIN, scaled, time_range, time_title, title_band, unit_suffix


def device_colors(devices: int) -> list[str]:
    """One line colour per device along a colour-blind-safe sequential scale."""
    return list(_device_colors(devices))


@cache
def _device_colors(devices: int) -> tuple[str, ...]:
    """Sampled once per device count (plotly's sampling took a fifth of a web redraw's CPU)."""
    if devices == 1:
        return (KIND_COLORS[Kind.F],)
    return tuple(sample_colorscale("Viridis", [0.9 * i / (devices - 1) for i in range(devices)]))


def memory(
    run: Run,
    *,
    limit: float | None = None,
    title: str | None = None,
    height: int | None = None,
    time_scale: float = 1.0,
    time_unit: str = "",
    stage_sizes: Sequence[float] | None = None,
    base: Sequence[float] | None = None,
    scale: float = 1.0,
    unit: str = "units",
    capacity: float | None = None,
    reserve: float | None = None,
    band_over: int | None = None,
    lines: Sequence[int] | None = None,
    device_legend: bool = True,
) -> Figure:
    """Activation per device over time as step lines, each device's peak marked.

    With ``band_over`` and more devices than that, the devices are drawn as one min–max band with
    lines for the ``lines`` devices over it (32 lines could not be told apart; by default those of the
    highest and the lowest peak, ``band_lines``); every device's peak stays marked.
    ``memory_traces`` says how many traces precede a limit line.

    Real units: ``stage_sizes`` (one microbatch's activation per stage, e.g. bytes), ``base`` (each
    device's static memory, drawn under its curve), ``scale`` and ``unit`` (bytes to GB: 1e-9,
    "GiB": 2**-30, "GiB"), ``capacity`` (a line, e.g. the GPU's HBM), ``reserve`` (the top of the
    capacity a run cannot use, drawn as a band under the capacity line) and ``time_scale``/``time_unit``
    as in gantt. ``limit``, ``capacity`` and ``reserve`` are in the unscaled unit of the curves.
    Without ``device_legend`` the lines of up to ``band_over`` devices have no legend entries (their
    colour goes dark to light with the device; hover names each): eight entries were a tenth of a
    redraw of the model view (``bench/bench_model_page.py``).
    """
    curves = _memory.activation(run.result, None if stage_sizes is None else np.asarray(stage_sizes, dtype=float))
    p = run.schedule.devices
    static = np.zeros(p) if base is None else np.asarray(base, dtype=float)
    if static.shape != (p,):
        raise ValueError(f"base needs one static size per device ({p}), got shape {static.shape}")
    span = time_range([run])
    tdt = time_dtype(run, time_scale)
    colors = device_colors(p)
    tu, what = unit_suffix(time_unit), "memory" if base is not None else "activation"
    data = []
    drawn = range(p)
    banded = band_over is not None and p > band_over
    if banded:
        drawn = _checked_lines(lines, p) if lines is not None else band_lines(curves.peak + static)
        data += _band(curves, static, span, scale, time_scale, tdt, unit, tu)
    for d in drawn:
        t, v = curves.times[d], curves.values[d]
        t, v = np.append(t, span[1]), np.append(v, v[-1])  # hold the last level to the end
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"device {d}" + (_band_role(d, curves.peak + static) if banded else ""),
                showlegend=banded or (p <= 8 and device_legend),  # past 8 a legend would crowd the title
                x=(t * time_scale).astype(tdt),
                y=((v + static[d]) * scale).astype(np.float32),
                line=dict(shape="hv", width=1.5, color=colors[d]),
                hovertemplate=f"device {d}<br>t %{{x:.7~g}}{tu}: %{{y:.4~g}} {unit}<extra></extra>",
            )
        )
    data.append(
        dict(
            type="scatter",
            mode="markers",
            name="peak",
            x=(curves.peak_time * time_scale).astype(tdt),
            y=((curves.peak + static) * scale).astype(np.float64),
            customdata=np.arange(p, dtype=int_dtype(p)),
            marker=dict(symbol="diamond", size=9, color=colors, line=dict(width=1, color="#333333")),
            hovertemplate=f"device %{{customdata}} peak %{{y:.4~g}} {unit} at t %{{x:.7~g}}{tu}<extra></extra>",
        )
    )
    for label, level, color in (("limit", limit, "#C00000"), ("capacity", capacity, "#7A0000")):
        if level is None:
            continue
        shown = level * scale
        text = f"{shown:g}" if unit == "units" else f"{shown:,.2f} {unit}"
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"{label} {text}",
                x=scaled(span, time_scale),
                y=[shown, shown],
                line=dict(color=color, dash="dash" if label == "limit" else "dot", width=2),
                hovertemplate=f"memory {label} {text}{' units' if unit == 'units' else ''}<extra></extra>",
            )
        )
    if reserve and capacity is not None:
        data += _reserve_band(capacity, reserve, scaled(span, time_scale), scale, unit)
    default_title = "memory per device: static + activation" if base is not None else "activation memory per device"
    layout = dict(
        title=dict(text=title or default_title, x=0, xanchor="left", font=dict(size=14)),
        height=height or 320,
        margin=MARGIN,
        legend=LEGEND,
        xaxis=dict(title=time_title(time_unit), range=scaled(span, time_scale), zeroline=False, gridcolor=GRID),
        yaxis=dict(title=dict(text=f"{what} ({unit})"), rangemode="tozero", gridcolor=GRID),
        plot_bgcolor="white",
        hovermode="closest",
    )
    title_band(layout, data)
    return figure(data, layout)


def memory_traces(run: Run, band_over: int | None = None, lines: Sequence[int] | None = None) -> int:
    """How many traces ``memory`` (abstract units) draws before its limit line: lines (or the band and
    its lines) and the peaks."""
    p = run.schedule.devices
    if band_over is not None and p > band_over:
        peaks = np.asarray(run.metrics.peak_activation, dtype=float)
        return 2 + len(_checked_lines(lines, p) if lines is not None else band_lines(peaks)) + 1
    return p + 1


def band_lines(peaks: Sequence[float]) -> list[int]:
    """The devices drawn as lines over the band by default: the highest peak and the lowest (first of ties)."""
    peaks = np.asarray(peaks, dtype=float)
    return sorted({int(np.argmax(peaks)), int(np.argmin(peaks))})


def lines_note(devices: int, band_over: int, lines: Sequence[int] | None, peaks: Sequence[float]) -> str:
    """What ``memory`` draws as lines for ``devices`` devices (the words beside a page's lines picker)."""
    if devices <= band_over:
        return f"up to {band_over} devices every device is drawn as a line"
    if not lines:
        high, low = int(np.argmax(peaks)), int(np.argmin(peaks))
        return f"automatic: device {high} (highest peak) and device {low} (lowest) over the band"
    return f"over the min–max band of all {devices} devices"


def _checked_lines(lines: Sequence[int], devices: int) -> list[int]:
    """Chosen devices in order, each once; a device that is not there is an error saying which."""
    out = sorted({int(d) for d in lines})
    if out and not 0 <= out[0] <= out[-1] < devices:
        raise ValueError(f"lines: devices {out} are not all among the {devices} devices (0–{devices - 1})")
    return out


def _band_role(d: int, peaks: np.ndarray) -> str:
    """What sets a line apart: the highest or lowest peak, or nothing for another chosen device."""
    if d == int(np.argmax(peaks)):
        return " (highest peak)"
    return " (lowest peak)" if d == int(np.argmin(peaks)) else ""


def _band(curves, static, span, scale: float, time_scale: float, tdt, unit: str, tu: str) -> list[dict]:
    """The min and max over devices of their memory at every moment, as a filled step band."""
    grid = np.unique(np.concatenate([*curves.times, [span[1]]]))
    low = np.full(len(grid), np.inf)
    high = np.full(len(grid), -np.inf)
    for d, (t, v) in enumerate(zip(curves.times, curves.values)):
        at = np.searchsorted(t, grid, side="right") - 1
        level = np.where(at >= 0, v[np.maximum(at, 0)], 0.0) + static[d]
        np.minimum(low, level, out=low)
        np.maximum(high, level, out=high)
    x = (grid * time_scale).astype(tdt)
    name = f"min–max of {len(curves.times)} devices"
    common = dict(type="scatter", mode="lines", x=x, legendgroup="band")
    return [
        dict(common, name="min", y=(low * scale).astype(np.float32), showlegend=False,
             line=dict(shape="hv", width=0.5, color="#8FA3C8"),
             hovertemplate=f"lowest device at t %{{x:.7~g}}{tu}: %{{y:.4~g}} {unit}<extra></extra>"),
        dict(common, name=name, y=(high * scale).astype(np.float32), fill="tonexty",
             fillcolor="rgba(120, 145, 200, 0.3)", line=dict(shape="hv", width=0.5, color="#8FA3C8"),
             hovertemplate=f"highest device at t %{{x:.7~g}}{tu}: %{{y:.4~g}} {unit}<extra></extra>"),
    ]  # fmt: skip


def _reserve_band(capacity: float, reserve: float, x: list, scale: float, unit: str) -> list[dict]:
    """The reserve as a filled band from capacity − reserve up to the capacity."""
    low, high = (capacity - reserve) * scale, capacity * scale
    common = dict(type="scatter", mode="lines", x=x, legendgroup="reserve", line=dict(width=0, color="#7A0000"))
    text = f"reserve {reserve * scale:,.2f} {unit}: not usable by the run (CUDA context, NCCL, fragmentation)"
    return [
        dict(common, name="usable", y=[low, low], showlegend=False,
             hovertemplate=f"usable {low:,.2f} {unit}<extra></extra>"),
        dict(common, name=f"reserve {reserve * scale:,.2f} {unit}", y=[high, high], fill="tonexty",
             fillcolor="rgba(122, 0, 0, 0.15)", hovertemplate=text + "<extra></extra>"),
    ]  # fmt: skip
