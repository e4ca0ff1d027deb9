"""The cost convention that makes schedules comparable.

``f``, ``b``, ``w`` are the times of one microbatch through one device's share of the model
(1/p of it). A schedule whose microbatches pass through S stages in total runs each stage action
in time x p/S, so the total work per device is the same for every schedule. BW takes b + w. An
overlapped pair takes the sum of its two actions times ``overlap``. ``p2p`` is added to every
dependency that crosses devices.

Uneven models have one meaning everywhere (page, CLI, API): ``stage_times[i]`` overrides the
times of device share i (the i-th 1/p of the model, in model order), and stage s of a schedule
with S stages covers the model from s/S to (s+1)/S, so it takes share ⌊s·p/S⌋'s times x p/S.
Every schedule thus runs the same heterogeneous model. The estimate layer, which knows each
stage's real time, gives ``exact_stage_times`` instead: one (f, b, w) per stage, unscaled.

``optimizer_step`` (real units only; empty in the abstract view) is, per device, the end-of-iteration
work (its exposed DP gradient sync, then the optimizer step) that the simulator places on that
device between an iteration's last backward op and the next op (``ppviz.iterations``).

``host_overhead`` is, per device, the time its host spends between two consecutive ops (dispatching the
next op, posting its sends and receives): an op starts no earlier than its device's previous op's end
plus this, and no earlier than its input's arrival. Empty (the default) means 0. Measured runs fit it
(``ppviz.measured.fit``); the host of a real stack is never free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .errors import InputError
from .ir import KINDS

MAX_TIME = 1e9  # op times and latency above this are refused: sums over a schedule stay exact


@dataclass(frozen=True)
class Costs:
    """Op times per device share, latency, overlap factor and the memory B frees."""

    f: float = 1.0
    b: float = 1.0
    w: float = 1.0
    p2p: float = 0.0
    overlap: float = 1.0
    b_frees: float = 0.0  # fraction of a chunk's activation that B frees (W frees the rest)
    stage_times: Mapping[int, Sequence[float]] = field(default_factory=dict)  # device share -> (f, b, w)
    exact_stage_times: Sequence[Sequence[float]] = ()  # one (f, b, w) per stage, not scaled by p/S
    link_p2p: Sequence[Sequence[float]] = ()  # [from device][to device] latency, replacing p2p (real units)
    optimizer_step: Sequence[float] = ()  # per device, its work between two iterations (real units)
    host_overhead: Sequence[float] = ()  # per device, its host's time between two consecutive ops

    def __post_init__(self) -> None:
        try:
            exact = tuple(tuple(fbw) for fbw in self.exact_stage_times)
        except TypeError:
            raise InputError("exact per-stage times need one (f, b, w) triple per stage", field="stage_times") from None
        object.__setattr__(self, "exact_stage_times", exact)
        try:
            links = tuple(tuple(row) for row in self.link_p2p)
        except TypeError:
            raise InputError("link_p2p needs one row of latencies per device", field="link_p2p") from None
        object.__setattr__(self, "link_p2p", links)
        for name in ("optimizer_step", "host_overhead"):
            object.__setattr__(self, name, _per_device_times(name, getattr(self, name)))
        for a, row in enumerate(links):
            if len(row) != len(links):
                raise InputError(
                    f"link_p2p must be square: row {a} has {len(row)} entries for {len(links)} devices",
                    field="link_p2p",
                )
            if not all((type(v) is float or type(v) is int) and 0.0 <= v <= MAX_TIME for v in row):  # fast path
                for b, v in enumerate(row):
                    _check_number(f"link_p2p[{a}][{b}]", v, low=0.0, high=MAX_TIME, field="link_p2p")
        for name in ("f", "b", "w", "p2p"):
            _check_number(name, getattr(self, name), low=0.0, high=MAX_TIME, field=name)
        _check_number("overlap", self.overlap, low=0.0, high=100.0, low_open=True, field="overlap")
        _check_number("b_frees", self.b_frees, low=0.0, high=1.0, field="b_frees")
        for stage, fbw in self.stage_times.items():
            if isinstance(stage, bool) or not isinstance(stage, int) or stage < 0:
                raise InputError(f"per-stage times need stage numbers ≥ 0 (got {stage!r})", field="stage_times")
            _check_triple(f"stage {stage}", fbw)
        for stage, fbw in enumerate(self.exact_stage_times):
            _check_triple(f"stage {stage}", fbw)
        if self.total_work() == 0:
            raise InputError(
                "F, B and W times are all 0, so nothing takes time: give at least one of them a time > 0", field="f"
            )

    def total_work(self) -> float:
        """f + b + w summed over the common times and every override (0 means nothing takes time)."""
        if self.exact_stage_times:
            return float(sum(sum(fbw) for fbw in self.exact_stage_times))
        return self.f + self.b + self.w + float(sum(sum(fbw) for fbw in self.stage_times.values()))

    def check_fits(self, stages: int, devices: int) -> None:
        """Refuse overrides that name a share or a stage the schedule does not have."""
        if self.link_p2p and len(self.link_p2p) != devices:
            raise InputError(
                f"link_p2p gives latencies for {len(self.link_p2p)} devices, but there are {devices}", field="link_p2p"
            )
        if self.optimizer_step and len(self.optimizer_step) != devices:
            raise InputError(
                f"optimizer_step gives times for {len(self.optimizer_step)} devices, but there are {devices}",
                field="optimizer_step",
            )
        if self.host_overhead and len(self.host_overhead) != devices:
            raise InputError(
                f"host_overhead gives times for {len(self.host_overhead)} devices, but there are {devices}",
                field="host_overhead",
            )
        if self.exact_stage_times and len(self.exact_stage_times) != stages:
            raise InputError(
                f"exact per-stage times give {len(self.exact_stage_times)} stages, but the schedule has {stages}",
                field="stage_times",
            )
        extra = [i for i in self.stage_times if i >= devices]
        if extra:
            raise InputError(
                f"per-stage times name device share {min(extra)}, but there are {devices} devices "
                f"(shares 0..{devices - 1})",
                field="stage_times",
            )

    def durations(self, stages: int, devices: int) -> np.ndarray:
        """Array ``[kind, stage]`` of one action's time: share ⌊s·p/S⌋'s times scaled by p/S, or the exact ones."""
        self.check_fits(stages, devices)
        out = np.empty((len(KINDS), stages), dtype=float)
        if self.exact_stage_times:
            for s, (f, b, w) in enumerate(self.exact_stage_times):
                out[:, s] = (f, b, w, b + w)
            return out
        scale = devices / stages
        for s in range(stages):
            f, b, w = self.stage_times.get(s * devices // stages, (self.f, self.b, self.w))
            out[:, s] = (f * scale, b * scale, w * scale, (b + w) * scale)
        return out

    @property
    def uniform(self) -> bool:
        """True when every stage runs the common times and nothing sits between ops or iterations (closed forms
        then apply)."""
        if (
            self.exact_stage_times
            or any(any(row) for row in self.link_p2p)
            or any(self.optimizer_step)
            or any(self.host_overhead)
        ):
            return False
        return all(tuple(v) == (self.f, self.b, self.w) for v in self.stage_times.values())

    def as_dict(self) -> dict:
        """Every cost input, JSON-ready, so that an exported run can be simulated again exactly."""
        return {
            "f": self.f,
            "b": self.b,
            "w": self.w,
            "p2p": self.p2p,
            "overlap": self.overlap,
            "b_frees": self.b_frees,
            "stage_times": {str(i): list(fbw) for i, fbw in sorted(self.stage_times.items())},
            "exact_stage_times": [list(fbw) for fbw in self.exact_stage_times],
            "link_p2p": [list(row) for row in self.link_p2p],
            "optimizer_step": list(self.optimizer_step),
            "host_overhead": list(self.host_overhead),
        }


def _per_device_times(name: str, times: object) -> tuple:
    """One time ≥ 0 per device, as a tuple."""
    try:
        out = tuple(times)
    except TypeError:
        raise InputError(f"{name} needs one time per device", field=name) from None
    for d, v in enumerate(out):
        _check_number(f"{name}[{d}]", v, low=0.0, high=MAX_TIME, field=name)
    return out


def _check_triple(name: str, fbw: object) -> None:
    if not isinstance(fbw, Sequence) or isinstance(fbw, str) or len(fbw) != 3:
        raise InputError(f"per-stage times of {name} need three numbers f, b, w (got {fbw!r})", field="stage_times")
    for kind, v in zip("fbw", fbw):
        _check_number(f"{name} {kind}", v, low=0.0, high=MAX_TIME, field="stage_times")


def _check_number(
    name: str, v: object, low: float, high: float = math.inf, low_open: bool = False, *, field: str
) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(f"{name} must be a finite number (got {v!r})", field=field)
    if v < low or (low_open and v == low) or v > high:
        lo = f"> {low:g}" if low_open else f"≥ {low:g}"
        hi = "" if high == math.inf else f" and ≤ {high:g}"
        raise InputError(f"{name} must be {lo}{hi} (got {v:g})", field=field)
