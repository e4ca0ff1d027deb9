"""ZB-V's rows, built group by group as columns, are the handcrafted rule played op by op."""

import pytest

from ppviz.ir import B, F, W
from ppviz.schedules import vshape


def op_by_op(p: int, m: int, r: int) -> list[tuple]:
    """ZB-V on device r (PyTorch's ``ScheduleZBVZeroBubble``), one op at a time: built for
    max(2p−1, m) microbatches, then cut to m."""
    n = max(2 * p - 1, m)
    s0, s1 = r, 2 * p - 1 - r
    count = {(s, k): 0 for s in (s0, s1) for k in (F, B, W)}
    row = []

    def run(stage, kind):
        row.append((stage, count[stage, kind], kind))
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
    return [a for a in row if a[1] < m]


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8, 13])
def test_zb_v_rows_are_the_rule_op_by_op(p):
    for m in [*range(1, 3 * p + 4), 50]:
        order = vshape.zb_v(p, m).order
        for r in range(p):
            assert [tuple(a) for a in order[r]] == op_by_op(p, m, r), (p, m, r)
