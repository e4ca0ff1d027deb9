"""Zero-bubble schedules on one stage per device: ZB-H2 and the automatic ZB scheduler.

Both split the backward into B (input gradient, on the critical path) and W (weight gradient,
free to move), and use W to fill what would be bubbles. ZB-H2 is the paper's handcrafted
schedule with twice 1F1B's warm-up; zb-auto searches, under a memory limit, for the order with
the least bubble (Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024). ZB-H1 lives with the
classic schedules.
"""

from __future__ import annotations

from ..costs import Costs
from ..errors import InputError
from ..ir import B, Columns, F, Placement, Schedule, stack_rows
from . import rows
from .greedy import Candidate, greedy_order, pick_best
from .registry import Param, Spec, register


def zb_h2(p: int, m: int) -> Schedule:
    return Schedule(Placement.standard(p), m, stack_rows(rows.handcrafted_zb(p, m, 2), p, m))


def _zb_h2_makespan(p: int, m: int, c: Costs) -> float | None:
    """With f = b = w and m ≥ 2p every device is busy from its first start: span m(f+b+w).

    Device r starts at r·f, and the last device ends last, so the makespan adds (p−1)·f.
    """
    if m < 2 * p or not c.f == c.b == c.w:
        return None
    return m * (c.f + c.b + c.w) + (p - 1) * c.f


# --- zb-auto --------------------------------------------------------------------------------


def zb_auto(p: int, m: int, max_memory: float | None = None, costs: Costs | None = None) -> Schedule:
    """The least-bubble order found under ``max_memory`` activation units (default 2p−1).

    Candidates: the greedy list scheduler with B first and W filling idle time, at warm-up
    depths p−1, p, 2p−2, 2p−1 and the limit (those the limit allows), plus ZB-H1 and ZB-H2
    when they fit. Each is timed exactly
    under ``costs``; the shortest longest span (the paper's measure), then makespan, then peak wins.
    """
    costs = costs or Costs()
    limit = 2 * p - 1 if max_memory is None else max_memory
    placement = Placement.standard(p)
    candidates: list[Columns] = []
    if limit >= min(p, m):
        candidates.append(stack_rows(rows.handcrafted_zb(p, m, 1), p, m))
    if limit >= min(2 * p - 1, m):
        candidates.append(stack_rows(rows.handcrafted_zb(p, m, 2), p, m))
    for warm in sorted({w for w in (p - 1, p, 2 * p - 2, 2 * p - 1, int(limit)) if 1 <= w <= limit}):
        order = greedy_order(placement, m, costs, limit, _zb_priority(warm))
        if order is not None:
            candidates.append(order)
    best = pick_best(placement, m, candidates, limit, costs)
    if best is None:
        raise ValueError(f"zb-auto found no schedule within max_memory {limit:g}: raise max_memory")
    return best


def _zb_priority(warm: int):
    """Prefer B (critical path); then F while fewer than ``warm`` are in flight; then W."""

    def rank(c: Candidate) -> tuple:
        if c.kind == B:
            return (0, c.microbatch)
        if c.kind == F:
            return (1 if c.in_flight < warm else 3, c.microbatch)
        return (2, c.microbatch)

    return rank


def _check_auto(p: int, m: int, max_memory: float | None) -> None:
    if max_memory is not None and max_memory < 1:
        raise InputError(
            field="max_memory", message=f"zb-auto needs max_memory ≥ 1 activation unit (got {max_memory:g})"
        )


register(
    Spec(
        name="zb-h2",
        description="ZB-H2: twice 1F1B's warm-up, W deferred into the bubbles: zero bubble on the span.",
        reference="Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024",
        build=zb_h2,
        split_backward=True,
        formula=_zb_h2_makespan,
        formula_text="m(f+b+w) + (p−1)f, f = b = w, m ≥ 2p (span m(f+b+w))",
        memory_text="≤ 2p−1",
    )
)
register(
    Spec(
        name="zb-auto",
        description="ZB automatic: least-bubble order found by a greedy search under a memory limit.",
        reference="Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 (automatic scheduling)",
        build=zb_auto,
        params=(Param("max_memory", float, None, 1, None, "activation limit per device (default 2p−1)"),),
        check=_check_auto,
        split_backward=True,
        uses_costs=True,
        formula_text="searched; ≤ zb-h1 at limit p, ≤ zb-h2 at 2p−1",
        memory_text="≤ max_memory",
    )
)
