"""Classic one-chunk schedules: GPipe, 1F1B, eager 1F1B, PipeDream-2BW, and ZB-H1.

All use one stage per device. Their per-device orders are a warm-up of forwards, a steady state
of one forward and one backward, and a cool-down of backwards; they differ in warm-up depth,
in splitting the backward, and in flushing between iterations.
"""

from __future__ import annotations

from collections.abc import Callable

from ..costs import Costs
from ..ir import BW, Action, B, F, Placement, Schedule, Step, W, make_schedule
from .registry import Param, Spec, register


def _one_f_one_b(p: int, m: int, warmup: Callable[[int], int], backward: Callable[[int, int], list[Step]]):
    """Per device: ``warmup(d)`` forwards, then F/backward alternating, then the rest backward."""
    order = []
    for d in range(p):
        n_warm = min(warmup(d), m)
        row: list[Step] = [Action(d, j, F) for j in range(n_warm)]
        for k in range(m - n_warm):
            row.append(Action(d, n_warm + k, F))
            row.extend(backward(d, k))
        for k in range(m - n_warm, m):
            row.extend(backward(d, k))
        order.append(row)
    return order


def _full_backward(d: int, k: int) -> list[Step]:
    return [Action(d, k, BW)]


def _work(costs: Costs) -> float:
    return costs.f + costs.b + costs.w


def gpipe(p: int, m: int) -> Schedule:
    order = [[Action(d, j, F) for j in range(m)] + [Action(d, j, BW) for j in range(m)] for d in range(p)]
    return make_schedule(Placement.standard(p), m, order)


def one_f_one_b(p: int, m: int) -> Schedule:
    return make_schedule(Placement.standard(p), m, _one_f_one_b(p, m, lambda d: p - d - 1, _full_backward))


def eager_one_f_one_b(p: int, m: int) -> Schedule:
    return make_schedule(Placement.standard(p), m, _one_f_one_b(p, m, lambda d: 2 * (p - d - 1), _full_backward))


def pipedream_2bw(p: int, m: int, iterations: int = 1) -> Schedule:
    """No flush: the iterations' microbatches run as one continuous 1F1B stream."""
    total = m * iterations
    order = _one_f_one_b(p, total, lambda d: p - d - 1, _full_backward)
    return make_schedule(Placement.standard(p), total, order, param_versions=2)


def _check_2bw(p: int, m: int, iterations: int) -> None:
    if m < p:
        raise ValueError(
            f"1f1b-2bw needs microbatches ≥ devices, since without a flush each iteration must fill "
            f"the pipeline (got {m} microbatches with {p} devices)"
        )


def zb_h1(p: int, m: int) -> Schedule:
    """ZB-H1: warm-up p-1-d forwards; then F (while any), B, and W once k ≥ d; leftover W last."""
    order = []
    for d in range(p):
        n_warm = min(p - 1 - d, m)
        row: list[Step] = [Action(d, j, F) for j in range(n_warm)]
        next_f, next_w = n_warm, 0
        for k in range(m):
            if next_f < m:
                row.append(Action(d, next_f, F))
                next_f += 1
            row.append(Action(d, k, B))
            if k >= d:
                row.append(Action(d, next_w, W))
                next_w += 1
        row.extend(Action(d, j, W) for j in range(next_w, m))
        order.append(row)
    return make_schedule(Placement.standard(p), m, order)


def _zb_h1_formula(p: int, m: int, c: Costs) -> float | None:
    """Exact when every deferred W fits a bubble: m ≥ p and w ≤ min(f, b) (or trivially p = 1 or w = 0).

    With w > f or w > b, or m < p, the W's no longer fit and the makespan is longer (tests/test_schedules_classic.py).
    """
    if p == 1 or c.w == 0 or (m >= p and c.w <= min(c.f, c.b)):
        return m * _work(c) + (p - 1) * (c.f + c.b - c.w)
    return None


register(
    Spec(
        name="gpipe",
        description="GPipe: every forward, then every backward (F-then-B); memory grows with m.",
        reference="Huang et al., GPipe, NeurIPS 2019",
        build=gpipe,
        formula=lambda p, m, c: (m + p - 1) * _work(c),
        formula_text="(m+p−1)(f+b+w)",
        memory_text="m",
    )
)
register(
    Spec(
        name="1f1b",
        description="1F1B (PipeDream-Flush): warm-up p−i−1 forwards, then one forward, one backward.",
        reference="Narayanan et al., PipeDream-2BW, ICML 2021; Megatron-LM (SC 2021)",
        build=one_f_one_b,
        formula=lambda p, m, c: (m + p - 1) * _work(c),
        formula_text="(m+p−1)(f+b+w)",
        memory_text="min(p−i, m)",
    )
)
register(
    Spec(
        name="eager-1f1b",
        description="Eager 1F1B: warm-up 2(p−i−1) forwards, to hide p2p latency at the cost of memory.",
        reference="Megatron-LM overlapped p2p; Qi et al., Zero Bubble PP, ICLR 2024 (eager baseline)",
        build=eager_one_f_one_b,
        memory_text="min(2(p−i−1)+1, m)",
    )
)
register(
    Spec(
        name="1f1b-2bw",
        description="PipeDream-2BW: 1F1B with double-buffered weights and no flush between iterations.",
        reference="Narayanan et al., Memory-Efficient Pipeline-Parallel DNN Training, ICML 2021",
        build=pipedream_2bw,
        params=(Param("iterations", int, 1, 1, 64, "training iterations run back to back without a flush"),),
        check=_check_2bw,
        formula=lambda p, m, c, iterations: (iterations * m + p - 1) * _work(c),
        formula_text="(k·m+p−1)(f+b+w) for k iterations",
        memory_text="min(p−i, m); 2 weight versions",
    )
)
register(
    Spec(
        name="zb-h1",
        description="ZB-H1: split backward (B, W) with W deferred into the bubbles; 1F1B's memory.",
        reference="Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024",
        build=zb_h1,
        split_backward=True,
        formula=_zb_h1_formula,
        formula_text="m(f+b+w) + (p−1)(f+b−w), m ≥ p and w ≤ min(f, b)",
        memory_text="≤ p",
    )
)
