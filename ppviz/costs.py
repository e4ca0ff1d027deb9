"""The cost convention that makes schedules comparable.

``f``, ``b``, ``w`` are the times of one microbatch through one device's share of the model
(1/p of it). A schedule whose microbatches pass through S stages in total runs each stage action
in time x p/S, so the total work per device is the same for every schedule. BW takes b + w. An
overlapped pair takes the sum of its two actions times ``overlap``. ``p2p`` is added to every
dependency that crosses devices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

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
    stage_times: Mapping[int, Sequence[float]] = field(default_factory=dict)  # stage -> (f, b, w)

    def __post_init__(self) -> None:
        for name in ("f", "b", "w", "p2p"):
            _check_number(name, getattr(self, name), low=0.0, high=MAX_TIME)
        _check_number("overlap", self.overlap, low=0.0, high=100.0, low_open=True)
        _check_number("b_frees", self.b_frees, low=0.0, high=1.0)
        for stage, fbw in self.stage_times.items():
            if isinstance(stage, bool) or not isinstance(stage, int) or stage < 0:
                raise ValueError(f"per-stage times need stage numbers ≥ 0 (got {stage!r})")
            if not isinstance(fbw, Sequence) or isinstance(fbw, str) or len(fbw) != 3:
                raise ValueError(f"per-stage times of stage {stage} need three numbers f, b, w (got {fbw!r})")
            for name, v in zip("fbw", fbw):
                _check_number(f"stage {stage} {name}", v, low=0.0, high=MAX_TIME)

    def durations(self, stages: int, devices: int) -> np.ndarray:
        """Array ``[kind, stage]`` of one action's time, scaled by p/S."""
        scale = devices / stages
        out = np.empty((len(KINDS), stages), dtype=float)
        for s in range(stages):
            f, b, w = self.stage_times.get(s, (self.f, self.b, self.w))
            out[:, s] = (f * scale, b * scale, w * scale, (b + w) * scale)
        return out

    @property
    def uniform(self) -> bool:
        """True when no stage overrides the common times (closed forms then apply)."""
        return all(tuple(v) == (self.f, self.b, self.w) for v in self.stage_times.values())


def _check_number(name: str, v: object, low: float, high: float = math.inf, low_open: bool = False) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number (got {v!r})")
    if v < low or (low_open and v == low) or v > high:
        lo = f"> {low:g}" if low_open else f"≥ {low:g}"
        hi = "" if high == math.inf else f" and ≤ {high:g}"
        raise ValueError(f"{name} must be {lo}{hi} (got {v:g})")
