"""Fit a calibration profile: the GPU's efficiencies that make ppviz's iteration times match
measured ones, searched on a grid as ``calibration.fit_matmul_efficiency`` searches the H100's.

The objective is the mean |ppviz / measured − 1| over the runs (calibration.py's). One efficiency
is searched over ``GRID`` (0.05 to 1.00 by 0.01: every 0.05 first, then every 0.01 around the best)
with the others held; with several, each in turn (coordinate descent) until a full round changes
none. A run set pins at most as many efficiencies as it has runs, so
fitting more than that is refused; an efficiency the runs do not depend on keeps its value (ties
go to the value nearest the current one).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .iteration import estimate, resolve, simulate_layout, totals
from .profile import FIELDS, Profile
from .specs import Gpu, Layout, Model, SpecError, as_dict, override

GRID = tuple(round(0.05 + 0.01 * i, 2) for i in range(96))  # 0.05 … 1.00
ROUNDS = 8
STRIDE = 5  # the coarse pass of a search: every 0.05


@dataclass(frozen=True)
class Measured:
    """One measured run: the model and layout it ran, its iteration time in seconds, and where the
    figure comes from (a log's path, a URL)."""

    label: str
    model: Model
    layout: Layout
    iteration_s: float
    source: str = ""

    def __post_init__(self) -> None:
        if not self.iteration_s > 0:
            raise SpecError(f"run {self.label!r}: the measured iteration time must be > 0 s", field="iteration_s")


def predict(runs: Sequence[Measured], gpu: Gpu) -> list[float]:
    """ppviz's iteration seconds of every run on ``gpu`` (``estimate``'s first two steps: the time
    without the throughput and memory figures a fit does not need)."""
    return [totals(simulate_layout(r.model, gpu, r.layout)).iteration_s for r in runs]


def mean_abs_error(runs: Sequence[Measured], gpu: Gpu) -> float:
    return statistics.fmean(abs(p / r.iteration_s - 1) for p, r in zip(predict(runs, gpu), runs))


def fit(runs: Sequence[Measured], gpu: Gpu | str, fields: Sequence[str] = ("matmul_efficiency",),
        grid: Sequence[float] = GRID) -> Profile:  # fmt: skip
    """The profile of ``gpu`` whose ``fields`` minimise the mean |error| over ``runs``."""
    runs = list(runs)
    if not runs:
        raise SpecError("a calibration needs at least one measured run", field="runs")
    _, gpu = resolve(runs[0].model, gpu)
    fields = tuple(dict.fromkeys(fields))
    unknown = [f for f in fields if f not in FIELDS]
    if unknown or not fields:
        raise SpecError(f"fit names efficiencies among {', '.join(FIELDS)} (got {', '.join(unknown) or 'none'})",
                        field="fit")  # fmt: skip
    if len(fields) > len(runs):
        raise SpecError(
            f"fitting {len(fields)} efficiencies ({', '.join(fields)}) needs at least {len(fields)} measured runs "
            f"(got {len(runs)}): add runs of other layouts, or fit fewer",
            field="fit",
        )
    for r in runs:  # every run must be one ppviz can estimate, before the search
        try:
            estimate(r.model, gpu, r.layout)
        except ValueError as e:
            raise SpecError(f"run {r.label!r}: {e}", field=getattr(e, "field", None)) from None
    best = gpu
    for _ in range(ROUNDS):
        moved = False
        for f in fields:
            now = getattr(best, f)
            value = _search(tuple(grid), lambda x, f=f, g=best: mean_abs_error(runs, override(g, **{f: x})), now)
            if value != now:
                best, moved = override(best, **{f: value}), True
        if not moved:
            break
    return _profile(runs, gpu, best, fields)


def _search(grid: tuple[float, ...], error, now: float) -> float:
    """The grid value of least error, coarse to fine: every STRIDE-th value, then every value within
    STRIDE steps of the best of those (the error of a run against one efficiency has one minimum: its
    time falls as the efficiency rises). Ties go to the value nearest ``now``."""
    seen: dict[float, float] = {}

    def key(x: float) -> tuple[float, float]:
        if x not in seen:
            seen[x] = _rounded(error(x))
        return seen[x], abs(x - now)

    i = grid.index(min(grid[::STRIDE], key=key))
    return min(grid[max(0, i - STRIDE) : i + STRIDE + 1], key=key)


def _rounded(error: float) -> float:
    """Errors equal to 1e-9 are ties (a field the runs do not depend on changes nothing)."""
    return round(error, 9)


def _profile(runs: list[Measured], default: Gpu, fitted: Gpu, fields: tuple[str, ...]) -> Profile:
    before, after = predict(runs, default), predict(runs, fitted)
    rows, errors = [], []
    for r, d, c in zip(runs, before, after):
        errors.append(c / r.iteration_s - 1)
        rows.append({
            "label": r.label, "source": r.source, "model": _plain(as_dict(r.model)),
            "layout": _plain(as_dict(r.layout)), "measured_s": r.iteration_s, "default_s": d, "calibrated_s": c,
            "error": errors[-1],
        })  # fmt: skip
    return Profile(
        fitted.name, tuple((k, getattr(fitted, k)) for k in FIELDS), fields, tuple(rows),
        statistics.fmean(abs(e) for e in errors), max(abs(e) for e in errors),
    )  # fmt: skip


def _plain(d: dict) -> dict:
    """JSON-able: tuples as lists (schedule_params as an object)."""
    out = {}
    for k, v in d.items():
        if k == "schedule_params":
            v = dict(v)
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out
