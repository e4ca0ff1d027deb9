"""V-shape schedules: device d holds stage d and stage 2p−1−d, so the V's turn stays on device p−1.

ZB-V is the zero-bubble authors' handcrafted order (identical to PyTorch's
``ScheduleZBVZeroBubble``). V-Min, V-Half and V-ZB follow "Pipeline Parallelism with Controllable
Memory" (Qi et al., NeurIPS 2024): one microbatch's building block of six ops per device
(F, f, B, b, W, w; lower case = the second chunk) is repeated every six slots. How far apart the
block's ops sit sets its lifetime, hence the peak memory; warm-up and cool-down are then repaired
without raising the peak. Each V chunk is half a device share, so its ops take f/2, b/2, w/2 and
its forward adds 1/2 activation unit.
"""

from __future__ import annotations

from ..ir import Action, B, F, Placement, Schedule, Step, W, make_schedule
from .registry import Spec, register


def zb_v_row(p: int, m: int, r: int) -> list[Step]:
    """ZB-V on device r, built for max(2p−1, m) microbatches, then cut to m."""
    n = max(2 * p - 1, m)
    s0, s1 = r, 2 * p - 1 - r
    count = {(s, k): 0 for s in (s0, s1) for k in (F, B, W)}
    row: list[Action] = []

    def run(stage: int, kind) -> None:
        row.append(Action(stage, count[stage, kind], kind))
        count[stage, kind] += 1

    for _ in range(2 * (p - r) - 1):
        run(s0, F)
    for _ in range(r):
        run(s1, F)
        run(s0, F)
    for _ in range(p - r):
        run(s1, F)
        run(s1, B)
        run(s1, W)
    while count[s1, F] < count[s0, F] or count[s0, F] < n:
        if count[s0, F] < n:
            run(s0, F)
        run(s0, B)
        run(s0, W)
        run(s1, F)
        run(s1, B)
        run(s1, W)
    for _ in range(r):
        run(s0, B)
        run(s1, B)
    for _ in range(p - r):
        run(s0, B)
        run(s0, W)
    while count[s1, W] < n:
        run(s1, W)
    while count[s0, W] < n:
        run(s0, W)
    return [a for a in row if a.microbatch < m]


def zb_v(p: int, m: int) -> Schedule:
    return make_schedule(Placement.vshape(p), m, [zb_v_row(p, m, r) for r in range(p)])


def _zb_v_makespan(p: int, m: int, c) -> float | None:
    """With f = b = w and m ≥ 2p each device is busy from its first start (span m(f+b+w));
    device r starts at r·f/2 and device p−1 ends last."""
    if m < 2 * p or not c.f == c.b == c.w:
        return None
    return m * (c.f + c.b + c.w) + (p - 1) * c.f / 2


register(
    Spec(
        name="zb-v",
        description="ZB-V: V placement with split backward; zero bubble on the span at 1F1B's memory.",
        reference="Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 (ZB-V); PyTorch ScheduleZBVZeroBubble",
        build=zb_v,
        chunks=2,
        split_backward=True,
        formula=_zb_v_makespan,
        formula_text="m(f+b+w) + (p−1)f/2, f = b = w, m ≥ 2p (span m(f+b+w))",
        memory_text="≤ p",
    )
)
