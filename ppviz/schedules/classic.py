"""Classic one-chunk schedules: GPipe, 1F1B, eager 1F1B, PipeDream-2BW (plain and eager), and ZB-H1.

All use one stage per device. Their per-device orders are a warm-up of forwards, a steady state
of one forward and one backward, and a cool-down of backwards; they differ in warm-up depth,
in splitting the backward, and in flushing between iterations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from ..costs import Costs
from ..errors import InputError
from ..ir import BW, F, Placement, Row, Schedule, stack_rows
from . import rows
from .registry import Param, Spec, register


def _one_f_one_b(p: int, m: int, warmup: Callable[[int], int]) -> Iterator[Row]:
    """Per device: ``warmup(d)`` forwards, then F/BW alternating, then the rest BW."""
    mb = np.arange(m)
    for d in range(p):
        yield rows.one_f_one_b(Row.of(F, d, mb), Row.of(BW, d, mb), min(warmup(d), m))


def _work(costs: Costs) -> float:
    return costs.f + costs.b + costs.w


def _flushed(p: int, m: int, iterations: int, one: Callable[[int, int], Iterator[Row]]) -> Schedule:
    """``iterations`` copies of one iteration's order, microbatches renumbered k·m + j, per device
    one after the other.

    That is a flush: device 0's first forward of the next iteration follows its last backward of
    this one, which through the backward chain follows every stage's last backward; every later
    stage's next forward follows device 0's. So the next iteration starts once the whole pipeline
    has drained (the optimizer step sits there), and no simulator change is needed.
    """
    total = m * iterations
    device_rows = (rows.repeated(row, m, iterations) for row in one(p, m))
    return Schedule(Placement.standard(p), total, stack_rows(device_rows, p, total))


def _gpipe_rows(p: int, m: int) -> Iterator[Row]:
    mb = np.arange(m)
    return (Row.of(F, d, mb) + Row.of(BW, d, mb) for d in range(p))


def _1f1b_rows(p: int, m: int) -> Iterator[Row]:
    return _one_f_one_b(p, m, lambda d: p - d - 1)


def _eager_rows(p: int, m: int) -> Iterator[Row]:
    return _one_f_one_b(p, m, lambda d: 2 * (p - d - 1))


def gpipe(p: int, m: int, iterations: int = 1) -> Schedule:
    return _flushed(p, m, iterations, _gpipe_rows)


def one_f_one_b(p: int, m: int, iterations: int = 1) -> Schedule:
    return _flushed(p, m, iterations, _1f1b_rows)


def eager_one_f_one_b(p: int, m: int, iterations: int = 1) -> Schedule:
    return _flushed(p, m, iterations, _eager_rows)


def pipedream_2bw(p: int, m: int, iterations: int = 1) -> Schedule:
    """No flush: the iterations' microbatches run as one continuous 1F1B stream."""
    total = m * iterations
    order = stack_rows(_one_f_one_b(p, total, lambda d: p - d - 1), p, total)
    return Schedule(Placement.standard(p), total, order, param_versions=2)


def eager_pipedream_2bw(p: int, m: int, iterations: int = 1) -> Schedule:
    """No flush, eager warm-up: one continuous stream of k·m microbatches, device d warming up
    min(2(p−d−1), m) forwards (at most one iteration ahead, so two weight versions suffice)."""
    total = m * iterations
    order = stack_rows(_one_f_one_b(p, total, lambda d: min(2 * (p - d - 1), m)), p, total)
    return Schedule(Placement.standard(p), total, order, param_versions=2)


def _check_2bw(p: int, m: int, iterations: int) -> None:
    if m < p:
        raise InputError(
            field="microbatches",
            message=f"1f1b-2bw needs microbatches ≥ devices, since without a flush each iteration must fill "
            f"the pipeline (got {m} microbatches with {p} devices)",
        )


def _check_eager_2bw(p: int, m: int, iterations: int) -> None:
    if m <= p:
        raise InputError(
            field="microbatches",
            message=f"eager-1f1b-2bw needs microbatches > devices per iteration, since without a flush the eager "
            f"warm-up must stay within one iteration (got {m} microbatches with {p} devices)",
        )


def _eager_2bw_formula(p: int, m: int, c: Costs, iterations: int = 1) -> float | None:
    """Exact when one iteration's eager warm-ups all differ (m ≥ 2(p−1)); with m < 2(p−1) the
    next iteration's warm-up is capped at m on several devices, which then wait on each other."""
    if iterations > 1 and m < 2 * (p - 1):
        return None
    return (iterations * m + p - 1) * _work(c)


_ITERATIONS = Param("iterations", int, 1, 1, 64, "training iterations, with a flush (optimizer step) between them")
_NO_FLUSH = Param("iterations", int, 1, 1, 64, "training iterations run back to back without a flush")


def zb_h1(p: int, m: int) -> Schedule:
    """ZB-H1: warm-up p-1-d forwards; then F (while any), B, and W once k ≥ d; leftover W last."""
    return Schedule(Placement.standard(p), m, stack_rows(rows.handcrafted_zb(p, m, 1), p, m))


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
        params=(_ITERATIONS,),
        formula=lambda p, m, c, iterations=1: iterations * (m + p - 1) * _work(c),
        formula_text="k(m+p−1)(f+b+w) for k iterations",
        memory_text="m",
    )
)
register(
    Spec(
        name="1f1b",
        description="1F1B (PipeDream-Flush): warm-up p−i−1 forwards, then one forward, one backward.",
        reference="Narayanan et al., PipeDream-2BW, ICML 2021; Megatron-LM (SC 2021)",
        build=one_f_one_b,
        params=(_ITERATIONS,),
        formula=lambda p, m, c, iterations=1: iterations * (m + p - 1) * _work(c),
        formula_text="k(m+p−1)(f+b+w) for k iterations",
        memory_text="min(p−i, m)",
    )
)
register(
    Spec(
        name="eager-1f1b",
        description="Eager 1F1B: warm-up 2(p−i−1) forwards, to hide p2p latency at the cost of memory.",
        reference="Megatron-LM overlapped p2p; Qi et al., Zero Bubble PP, ICLR 2024 (eager baseline)",
        build=eager_one_f_one_b,
        params=(_ITERATIONS,),
        formula=lambda p, m, c, iterations=1: iterations * (m + p - 1) * _work(c),
        formula_text="k(m+p−1)(f+b+w) for k iterations (latency 0)",
        memory_text="min(2(p−i−1)+1, m)",
    )
)
register(
    Spec(
        name="1f1b-2bw",
        description="PipeDream-2BW: 1F1B with double-buffered weights and no flush between iterations.",
        reference="Narayanan et al., Memory-Efficient Pipeline-Parallel DNN Training, ICML 2021",
        build=pipedream_2bw,
        params=(_NO_FLUSH,),
        check=_check_2bw,
        formula=lambda p, m, c, iterations: (iterations * m + p - 1) * _work(c),
        formula_text="(k·m+p−1)(f+b+w) for k iterations",
        memory_text="min(p−i, m); 2 weight versions",
    )
)
register(
    Spec(
        name="eager-1f1b-2bw",
        description="Eager 1F1B with PipeDream-2BW: eager warm-up, double-buffered weights, no flush.",
        reference="Narayanan et al., PipeDream-2BW, ICML 2021; Megatron-LM overlapped p2p (eager warm-up)",
        build=eager_pipedream_2bw,
        params=(_NO_FLUSH,),
        check=_check_eager_2bw,
        formula=_eager_2bw_formula,
        formula_text="(k·m+p−1)(f+b+w) for k iterations, when k = 1 or m ≥ 2(p−1)",
        memory_text="min(2(p−i−1)+1, m); 2 weight versions",
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
