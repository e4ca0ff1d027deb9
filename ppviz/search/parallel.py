"""``--jobs N``: the groups of the space dealt round-robin to N local processes, each running the same
exact search on its share; the merged top k and Pareto front are exact because the top k of a union
is the top k of the parts' top k's, and a point on the union's front is on its part's front (each
part's window, relative to its own best time, holds the union's)."""

from __future__ import annotations

import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor, wait

from .engine import search
from .result import SearchResult, merge_same

_shared = None  # per worker: the array its progress goes to


def _init(shared) -> None:
    global _shared
    _shared = shared


def _part(args) -> SearchResult:
    i, n, model, gpu, gpus, gbs, kw = args

    def progress(done: int, total: int) -> None:
        _shared[2 * i], _shared[2 * i + 1] = done, total

    return search(model, gpu, gpus, gbs, progress=progress, partition=(i, n), **kw)


def _key(row: dict) -> tuple:
    return (row["schedule"], row["tp"], row["cp"], row["pp"], row["dp"], row["ep"], row["vpp"], row["mbs"],
            row["recompute"], row["sequence_parallel"], row["zero"], tuple(row["layer_split"] or ()), row["tp_mode"],
            tuple(row["tp2d"] or ()), row["summa_blocks"], tuple(row["nvlink_dp_pp"] or ()),
            row["tp_comm_overlap"])  # fmt: skip


def search_parallel(model, gpu, gpus: int, global_batch: int, *, jobs: int, progress=None, cancel=None, **kw):
    """``search`` spread over ``jobs`` processes (same arguments, same result)."""
    t0 = time.perf_counter()
    ctx = mp.get_context("fork")
    shared = ctx.Array("q", 2 * jobs, lock=False)
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init, initargs=(shared,)) as pool:
        futures = [pool.submit(_part, (i, jobs, model, gpu, gpus, global_batch, kw)) for i in range(jobs)]
        while True:
            done, pending = wait(futures, timeout=0.1)
            if progress is not None:
                progress(sum(shared[0::2]), sum(shared[1::2]))
            if cancel is not None and cancel():
                for f in pending:
                    f.cancel()
                raise ValueError("search cancelled")
            if not pending:
                break
        parts = [f.result() for f in futures]
    top = kw.get("top", 10)
    rows = merge_same(sorted((r for p in parts for r in p.layouts), key=lambda r: (r["iteration_s"], _key(r))))[:top]
    for i, r in enumerate(rows):
        r["rank"] = i + 1
    front = []
    limit = (1 + kw.get("pareto_within", 0.1)) * (rows[0]["iteration_s"] if rows else 0.0)
    for r in sorted((r for p in parts for r in p.pareto), key=lambda r: (r["iteration_s"], max(r["peak_bytes"]))):
        if r["iteration_s"] <= limit and (not front or max(r["peak_bytes"]) < max(front[-1]["peak_bytes"])):
            front.append(r)
    if not rows:  # no part found a layout that fits: the whole search says what is closest
        return search(model, gpu, gpus, global_batch, **{**kw, "pareto": False})
    s = lambda name: sum(getattr(p, name) for p in parts)  # noqa: E731
    return SearchResult(
        model=parts[0].model, gpu=parts[0].gpu, gpus=gpus, global_batch=global_batch, layouts=rows, pareto=front,
        searched=s("searched"), pruned=s("pruned"), pruned_by_time=s("pruned_by_time"),
        pruned_by_memory=s("pruned_by_memory"), simulated=s("simulated"), over_capacity=s("over_capacity"),
        budget_cut=s("budget_cut"), budget_ops=parts[0].budget_ops, seconds=time.perf_counter() - t0, cancelled=False,
        capacity_bytes=parts[0].capacity_bytes, headroom=parts[0].headroom, inputs=parts[0].inputs,
    )  # fmt: skip
