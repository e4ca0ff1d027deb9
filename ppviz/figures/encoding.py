"""A figure as plain data: what the builders return, how it becomes JSON, and plotly at the edge.

Builders return ``{"data": [...], "layout": {...}}`` dicts written in plotly.js's own terms, numpy
arrays left in them: building plotly objects took two thirds of a page redraw's server CPU (8×32
Gantt + memory: 17 ms → 5.5 ms), and validating them more than half (28 → 12 ms a request).
``encode`` makes one JSON-ready (arrays as plotly.js's base64 typed arrays, as plotly itself writes
them); ``to_plotly`` makes a ``go.Figure`` where one is needed (a standalone HTML page, an image).
"""

from __future__ import annotations

import base64
from typing import Any, TypedDict

import numpy as np
import plotly.graph_objects as go

from ..api import Run


class Figure(TypedDict):
    """A plotly.js figure: its traces and its layout (numpy arrays allowed until ``encode``)."""

    data: list[dict[str, Any]]
    layout: dict[str, Any]


_NO_TEMPLATE = {"data": {"scatter": [{"type": "scatter"}]}}
_FONT = {"family": "system-ui, sans-serif", "size": 12}


def figure(data: list[dict], layout: dict) -> Figure:
    """The figure of ready traces and layout, with ppviz's font and an empty template: the empty
    template (what plotly's "none" resolves to) keeps plotly's default theme (about 9 kB of JSON)
    out of every figure; the few styles ppviz wants are set in the layout itself."""
    return {"data": data, "layout": {**layout, "template": _NO_TEMPLATE, "font": dict(_FONT)}}


def to_plotly(fig: Figure) -> go.Figure:
    """The ``go.Figure`` of a plain figure, unvalidated (the builders write plotly.js's own terms):
    for writing HTML or images, or inspecting a figure through plotly's attributes."""
    return go.Figure(fig, _validate=False)


def encode(value, key: str = ""):
    """A figure (or any part of one) as Dash sends it: numpy arrays as plotly.js typed arrays
    (base64), numpy scalars as numbers; a new structure, the given one left as it was."""
    if isinstance(value, dict):
        return {k: encode(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist() if key == "range" or value.size == 0 else _typed(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


_TYPED = {"f8", "f4", "i4", "u4", "i2", "u2", "i1", "u1"}


def _typed(a: np.ndarray):
    """plotly.js's typed-array form of ``a`` (int64 as int32 when it fits), else a JSON list."""
    if a.dtype.kind in "iu" and a.dtype.itemsize == 8:
        if not (a.min() >= -(2**31) and a.max() < 2**31):
            return a.tolist()
        a = a.astype(np.int32)
    code = f"{a.dtype.kind}{a.dtype.itemsize}"
    if code not in _TYPED:
        return a.tolist()
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    spec = {"dtype": code, "bdata": base64.b64encode(a.tobytes()).decode("ascii")}
    if a.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in a.shape)
    return spec


def decode_typed_array(spec) -> np.ndarray:
    """The array of a typed-array spec (``encode``'s form; plain sequences as they are), for tests
    and callers that read an encoded figure."""
    if isinstance(spec, dict):
        a = np.frombuffer(base64.b64decode(spec["bdata"]), dtype="<" + spec["dtype"])
        return a.reshape([int(n) for n in spec["shape"].split(",")]) if "shape" in spec else a
    return np.asarray(spec)


# --- compact arrays --------------------------------------------------------------------------


def time_dtype(run: Run, scale: float = 1.0) -> type:
    """float32 when it places every bar edge within 0.1% of the shortest bar, else float64.

    Hover prints 7 significant digits, which float32 holds, so the saving costs no precision a
    reader can see; exports (CSV, JSON, trace) always carry the exact float64 times.
    """
    r = run.result
    times = np.concatenate([r.slot_start, r.slot_end]) * scale
    err = np.abs(times.astype(np.float32).astype(np.float64) - times).max()
    widths = (r.slot_end - r.slot_start) * scale
    shortest = widths[widths > 0].min() if (widths > 0).any() else 1.0
    return np.float32 if err <= 1e-3 * shortest else np.float64


def int_dtype(high: int) -> type:
    return np.int8 if high < 2**7 else np.int16 if high < 2**15 else np.int32
