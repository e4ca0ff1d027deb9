"""Per-device rows of the closed-form schedules, built as columns with numpy.

Each pattern is an index into the concatenation of a device's forwards, backwards and weight
passes (``Row``s of equal length n), so a row costs a few array operations, not a Python step per
action.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..ir import B, F, Row, W


def one_f_one_b(fwd: Row, bwd: Row, warm: int) -> Row:
    """``warm`` forwards, then one forward and one backward in turn, then the remaining backwards."""
    n = len(fwd.kind)
    k = n - warm  # steady pairs
    idx = np.empty(2 * n, dtype=np.int64)
    idx[:warm] = np.arange(warm)
    idx[warm : warm + 2 * k : 2] = np.arange(warm, n)
    idx[warm + 1 : warm + 2 * k : 2] = n + np.arange(k)
    idx[warm + 2 * k :] = n + np.arange(k, n)
    return (fwd + bwd).take(idx)


def paired(fwd: Row, bwd: Row, warm: int) -> Row:
    """``warm`` forwards, then each further forward overlapped with the oldest backward (one slot
    for the pair), then the remaining backwards."""
    n = len(fwd.kind)
    k = n - warm
    slot = np.concatenate([np.arange(warm), warm + np.repeat(np.arange(k), 2), warm + k + np.arange(n - k)])
    return one_f_one_b(fwd, bwd, warm)._replace(slot=slot)


def zero_bubble(fwd: Row, bwd: Row, wgt: Row, warm: int, hold: int) -> Row:
    """``warm`` forwards; then for each k: the next forward (while any), backward k, and weight
    pass k − ``hold`` once k ≥ ``hold``; then the weight passes held back."""
    n = len(fwd.kind)
    k = np.arange(n)
    has_f, has_w = k < n - warm, k >= hold
    size = 1 + has_f + has_w
    at = warm + np.cumsum(size) - size  # where step k's group starts
    idx = np.empty(3 * n, dtype=np.int64)
    idx[:warm] = np.arange(warm)
    idx[at[has_f]] = warm + k[has_f]
    b_at = at + has_f
    idx[b_at] = n + k
    idx[b_at[has_w] + 1] = 2 * n + k[has_w] - hold
    tail = min(hold, n)
    idx[3 * n - tail :] = 2 * n + np.arange(n - tail, n)
    return (fwd + bwd + wgt).take(idx)


def repeated(row: Row, microbatches: int, times: int) -> Row:
    """``times`` copies of ``row`` one after the other, copy i's microbatches shifted by i·m."""
    if times == 1:
        return row
    n = len(row.kind)
    shift = np.repeat(np.arange(times, dtype=np.int64) * microbatches, n)
    return Row(np.tile(row.kind, times), np.tile(row.stage, times), np.tile(row.microbatch, times) + shift)


def handcrafted_zb(p: int, m: int, depth: int) -> Iterator[Row]:
    """ZB-H1 (depth 1) and ZB-H2 (depth 2), device r: depth·(p−1−r) forwards, then F (while any),
    B, and W once k ≥ depth·r; leftover W last."""
    mb = np.arange(m)
    for r in range(p):
        warm = min(depth * (p - 1 - r), m)
        yield zero_bubble(Row.of(F, r, mb), Row.of(B, r, mb), Row.of(W, r, mb), warm, depth * r)
