"""Branch and bound over the layout space: the exact top k by simulated iteration time.

Groups of layouts (same per-layer costs) and then single layouts sit in one heap ordered by a
lower bound on their iteration time. The cheapest bound is popped first: a group is expanded into
its layouts (each with a tighter bound and its peak memory, both without simulating, by the
estimate layer's ``devices`` functions), a layout is simulated by the estimate layer's first two
steps (``simulate_layout``, ``totals``: its time and peak memory). Once the popped bound exceeds the
k-th best time found, nothing left can enter the top k. The Pareto front of time against peak
memory is exact the same way: a layout is skipped only when a simulated layout that fits is no
slower than its time bound and no larger than its memory bound. Simulations are shared by layouts
that differ only in ZeRO stage; only the rows returned are completed into Estimates.

Every budget is counted in work, never in seconds, so the same call ranks the same on any machine
under any load: the schedules that search their order under the op times (v-*, zb-auto) are
simulated while the ops of the orders they built stay under ``budget_ops`` (each distinct order
counted once, by its size: stages × microbatches × 3 kinds); the time measured is only reported.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import cached_property, partial

import numpy as np
from cachetools import LRUCache

from .. import schedules
from ..estimate import devices, layer
from ..estimate.iteration import (
    Totals,
    complete,
    p2p_seconds,
    resolve,
    schedule_for,
    shape_of,
    simulate_layout,
    stage_plan,
    totals,
)
from ..estimate.specs import Gpu, Layout, Model
from ..units import gib
from . import bounds, space
from .result import SearchResult, row_of

# ZeRO-3 joins when asked (zero=[3]). The estimate layer times its per-layer gathers inside the ops,
# so its stage times differ: it is its own simulation (run key) and its own DP-sync floor (none at the end)
ZEROS = (0, 1, 2)
ORDER_CACHE = 4096  # built schedules kept (each distinct (schedule, pp, m, vpp) is built once)
RUN_CACHE = 32  # simulations kept for the layouts that share one (they differ only in ZeRO stage 0 to 2)
# ops of searched orders (v-*, zb-auto) built per search: about the 2 CPU-seconds a search spent on them
# before budgets were counted in work (a v-* order of 16 devices × 48 microbatches, 4,608 ops, takes
# 0.2-1.1 s on the 2-core reference machine; see docs/search.md)
BUDGET_OPS = 15_000


@dataclass(eq=False)
class _Group:
    g: space.Group
    variants: list[space.Variant]
    count: int  # layouts in the group
    lb_s: float
    mem_lb: float


@dataclass(eq=False)
class _Raw:
    """A schedule of a group bounded by its makespan floor only."""

    lay: Layout
    variant: space.Variant
    order: bounds.Order
    plan: object
    p2p: float
    span: float
    lb_s: float
    mem_lb: float  # the group's
    count: int


@dataclass(eq=False)
class _Variant:
    lay: Layout
    variant: space.Variant
    order: bounds.Order
    plan: object
    p2p: float
    span: float  # makespan lower bound, seconds
    act: np.ndarray  # activation peak per device (exact or a lower bound)
    exact: bool
    lb_s: float
    mem: float  # lower bound over the ZeRO stages
    count: int
    params: np.ndarray  # per device, its parameters (the estimate layer's ``params_per_device``)
    expert: np.ndarray  # the routed-expert part of them
    slot: np.ndarray  # per device, the longest slot it can run (seconds)


@dataclass(eq=False)
class _Leaf:
    lay: Layout  # the schedule's layout, at any ZeRO stage
    zero: int
    variant: space.Variant
    order: bounds.Order
    lb_s: float
    mem: float  # exact peak bytes when ``exact``, else a lower bound
    exact: bool
    run_key: tuple

    @cached_property
    def layout(self) -> Layout:
        """The layout this leaf stands for, built when it is simulated (most leaves are pruned before)."""
        return self.lay.replace(zero=self.zero)


class _Front:
    """The simulated layouts that fit and that no other dominates (time ↑, peak ↓)."""

    def __init__(self):
        self.t: list[float] = []
        self.m: list[float] = []
        self.keys: list[tuple] = []

    def dominated(self, t: float, m: float) -> bool:
        i = bisect.bisect_right(self.t, t)
        return i > 0 and self.m[i - 1] <= m

    def add(self, t: float, m: float, key: tuple) -> list[tuple]:
        """Insert a point; return the keys it pushed off the front."""
        if self.dominated(t, m):
            return [key]
        i = bisect.bisect_left(self.t, t)
        j = i
        while j < len(self.t) and self.m[j] >= m:
            j += 1
        gone = self.keys[i:j]
        self.t[i:j], self.m[i:j], self.keys[i:j] = [t], [m], [key]
        return gone


def search(
    model: Model | str,
    gpu: Gpu | str,
    gpus: int,
    global_batch: int,
    *,
    top: int = 10,
    options: space.Options | None = None,
    budget_ops: int = BUDGET_OPS,
    pareto: bool = True,
    pareto_within: float = 0.1,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    partition: tuple[int, int] | None = None,
    **restrictions,
) -> SearchResult:
    """The ``top`` fastest layouts of ``model`` on ``gpus`` GPUs at ``global_batch`` sequences that fit
    in HBM, each simulated by ``ppviz.estimate``, and the Pareto front of iteration time against peak
    memory among the layouts at most ``pareto_within`` (a fraction) slower than the best.

    ``restrictions`` (or ``options``) restrict dimensions: ``tp=[4, 8]``, ``schedules=["1f1b", "zb-v"]``,
    ``headroom=0.1`` (10% of HBM kept free beyond the GPU's reserve), ... (see
    ``ppviz.search.space.Options``). Schedules that search their order (v-*, zb-auto) are simulated
    while the ops of the orders they built stay under ``budget_ops`` (work, not time: the same ranking
    on any machine); the result says how many were cut. ``progress(done, total)`` is called as layouts
    are decided; when ``cancel()`` returns True the search stops and returns what it has, marked
    ``cancelled``. ``partition`` (i, n) searches only every n-th group from the i-th (``--jobs``).
    Raises ValueError with what to change when no layout divides or none fits.
    """
    t0 = time.perf_counter()
    model, gpu = resolve(model, gpu)
    for name, v in (("gpus", gpus), ("global batch", global_batch), ("top", top)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a whole number ≥ 1 (got {v!r})")
    if isinstance(budget_ops, bool) or not isinstance(budget_ops, int) or budget_ops < 0:
        raise ValueError(f"the budget of searching schedules is a whole number of ops ≥ 0 (got {budget_ops!r})")
    if options is None:
        options = space.Options(**restrictions)
    elif restrictions:
        options = replace(options, **restrictions)
    if isinstance(pareto_within, bool) or not isinstance(pareto_within, (int, float)) or pareto_within < 0:
        raise ValueError(f"pareto_within is a fraction ≥ 0 of the best time (got {pareto_within!r})")
    s = _Search(model, gpu, gpus, global_batch, top, options, budget_ops, pareto, progress, cancel)
    s.pareto_within = float(pareto_within)
    s.partition = partition
    s.run()
    return s.result(time.perf_counter() - t0)


class _Search:
    def __init__(self, model, gpu, gpus, gbs, top, opt, budget_ops, pareto, progress, cancel):
        self.model, self.gpu, self.gpus, self.gbs, self.top, self.opt = model, gpu, gpus, gbs, top, opt
        self.budget_ops, self.pareto = budget_ops, pareto
        self.progress_cb, self.cancel_cb = progress, cancel
        self.capacity = gpu.usable_bytes - opt.headroom * gpu.hbm_bytes  # the fit rule of every surface
        self.zeros = opt.zero or ZEROS
        self.seq = itertools.count()
        self.heap: list = []
        self.best: list = []  # max-heap of (-time, -rank key) of the k best that fit
        self.estimates: dict[tuple, Totals] = {}
        self.front = _Front()
        # layouts equal in time and in every device's peak are one row: (time, peaks) -> the kept row's key,
        # and its key -> the layouts that differ from it only in settings that change nothing
        self.same: dict[tuple, tuple] = {}
        self.equivalents: dict[tuple, list[Layout]] = {}
        self.orders: LRUCache = LRUCache(ORDER_CACHE)
        self.plans: dict = {}
        self.dp_floors: dict = {}
        self.held: dict = {}
        self.group_bounds: dict = {}
        self.p2ps: dict = {}
        self.runs: LRUCache = LRUCache(RUN_CACHE)
        self.searched = self.pruned_time = self.pruned_memory = self.simulated = self.over = self.cut = 0
        self.searching_ops = 0  # ops of the searched orders built (each distinct one once)
        self.built: set = set()  # their run keys
        self.cancelled = False
        self.invalid = 0
        self._last_progress = 0.0
        self.partition: tuple[int, int] | None = None
        self.pareto_within = 0.1

    # --- driver -------------------------------------------------------------------------------

    def run(self) -> None:
        sp = space.groups(self.model, self.gpus, self.gbs, self.opt, self.gpu.nvlink_domain)
        self.invalid = sp.invalid
        all_groups = []
        part = sp.groups if self.partition is None else sp.groups[self.partition[0] :: self.partition[1]]
        for g in part:
            grp = self._group(g)
            if grp.count:
                all_groups.append(grp)
        self.searched = sum(grp.count for grp in all_groups)
        if not self.searched:
            if self.partition is not None:
                return
            raise ValueError(self._nothing_divides())
        for grp in all_groups:
            if grp.mem_lb > self.capacity * (1 + bounds.SAFETY):
                self.pruned_memory += grp.count
            else:
                heapq.heappush(self.heap, (grp.lb_s, next(self.seq), grp))
        self._progress(force=True)
        while self.heap:
            if self.cancel_cb is not None and self.cancel_cb():
                self.cancelled = True
                break
            lb, _, node = heapq.heappop(self.heap)
            if not self._needed(lb, node):
                self._skip(node)
                if lb > self._threshold() and (not self.pareto or lb > (1 + self.pareto_within) * self._best_time()):
                    for _, _, rest in self.heap:
                        self._skip(rest)
                    self.heap.clear()
                continue
            if isinstance(node, _Leaf):
                self._simulate(node)
            else:
                self._children(node, self._push, self.capacity)
            self._progress()
        self._progress(force=True)
        if not self.best and not self.cancelled and self.partition is None:
            raise ValueError(self._nothing_fits(all_groups))

    def _push(self, node) -> None:
        heapq.heappush(self.heap, (node.lb_s, next(self.seq), node))

    def _threshold(self) -> float:
        return -self.best[0][0] if len(self.best) >= self.top else np.inf

    def _needed(self, lb: float, node) -> bool:
        if lb <= self._threshold():
            return True
        if not self.pareto or lb > (1 + self.pareto_within) * self._best_time():
            return False
        return not self.front.dominated(lb, node.mem_lb if isinstance(node, (_Group, _Raw)) else node.mem)

    def _best_time(self) -> float:
        return min((-t for t, _ in self.best), default=np.inf)

    def _skip(self, node) -> None:
        self.pruned_time += 1 if isinstance(node, _Leaf) else node.count

    def _progress(self, force: bool = False) -> None:
        if self.progress_cb is None:
            return
        now = time.perf_counter()
        if force or now - self._last_progress > 0.1:
            self._last_progress = now
            done = self.pruned_time + self.pruned_memory + self.simulated + self.cut
            # layouts still queued whose bound already rules them out will be pruned: count them as done
            cut = self._threshold()
            if self.pareto:
                cut = max(cut, (1 + self.pareto_within) * self._best_time())
            done += sum(1 if isinstance(n, _Leaf) else n.count for lb, _, n in self.heap if lb > cut)
            self.progress_cb(min(done, self.searched), self.searched)

    # --- bounds -------------------------------------------------------------------------------

    def _group(self, g: space.Group) -> _Group:
        """A group's layouts and bounds that hold for every one of them (any schedule, split, ZeRO); the
        NVLink placement changes neither (only p2p and DP-sync tiers), so placements share them."""
        key = replace(g, nvlink_dp_pp=None)
        shared = self.group_bounds.get(key)
        if shared is None:
            shared = self.group_bounds[key] = self._group_bounds(key)
        return _Group(g, *shared)

    def _group_bounds(self, g: space.Group) -> tuple:
        variants = space.variants(self.model, g, self.opt)
        count = len(variants) * len(self.zeros)
        if not count:
            return variants, 0, 0.0, 0.0
        lay = g.layout(self.gbs, **dict(self.opt.carry))
        one = stage_plan(self.model, self.gpu, lay, 1, True)  # the whole model on one stage, tied weights shared
        work = one.f[0] + one.b[0] + one.w[0]  # every device's busy time averages m·work/pp
        lb_s = g.microbatches * work / g.pp
        shard = g.dp * g.cp
        bpp = devices.bytes_per_param(max(self.zeros), shard)
        shape = shape_of(lay)
        kinds = [
            layer.layer(self.model, self.gpu, shape, moe) for moe in ((False, True) if self.model.moe else (False,))
        ]
        act = min(p.activation_bytes for p in kinds)
        average = bpp * one.params[0] / g.pp + act  # the average device's static bytes + one layer's activation
        # in every placement each direction's stages cover the L layers once, so some device holds ≥ ⌈L/pp⌉ layers
        # of one direction: their static bytes, and one microbatch of their activation when it starts the last
        heaviest = -(-self.model.layers // g.pp) * min(bpp * p.params + p.activation_bytes for p in kinds)
        mem_lb = max(average, heaviest)
        return variants, count, lb_s, mem_lb

    def _order(self, lay: Layout, v: space.Variant, built: bool) -> bounds.Order:
        """The schedule's order (built) or just its placement (for a schedule with one direction)."""
        key = (v.schedule, lay.pp, lay.microbatches, v.vpp, built)
        o = self.orders.get(key)
        if o is None:
            if built and not v.uses_costs:
                o = bounds.order_of(schedule_for(lay), v.split_backward)
            else:
                o = bounds.unbuilt_order(space.placement(v.schedule, lay.pp, v.vpp), lay.microbatches, v.split_backward)
                if len(o.placement.devices_of) > 1:  # how microbatches split between directions: build it
                    o = self._order(lay, v, True)
            self.orders[key] = o
        return o

    def _children(self, node, push: Callable[[object], None], capacity: float) -> None:
        """``push`` what a group, a schedule or its bounds open into; those over ``capacity`` are pruned."""
        if isinstance(node, _Group):
            self._expand(node, push)
        elif isinstance(node, _Raw):
            self._bound(node, push, capacity)
        else:
            self._leaves(node, push, capacity)

    def _expand(self, grp: _Group, push) -> None:
        """A group into its schedules, each bounded by its makespan floor alone (the rest when popped)."""
        g = grp.g
        base = g.layout(self.gbs, **dict(self.opt.carry))
        for v in grp.variants:
            lay = base.replace(schedule=v.schedule, vpp=v.vpp, layer_split=v.layer_split)
            order = self._order(lay, v, False)
            push(self._raw(lay, v, order, grp.mem_lb))

    def _raw(self, lay: Layout, v: space.Variant, order: bounds.Order, mem_lb: float) -> _Raw:
        pl = order.placement
        tied_shared = any(row[0] == row[-1] for row in pl.devices_of)
        key = (shape_of(lay), v.layer_split, order.stages, tied_shared)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = stage_plan(self.model, self.gpu, lay, order.stages, tied_shared)
        key = (lay.tp, lay.cp, lay.dp, lay.mbs, lay.nvlink_dp_pp, pl.devices_of)
        p2p = self.p2ps.get(key)
        if p2p is None:
            p2p = self.p2ps[key] = p2p_seconds(self.model, self.gpu, lay, pl)
        span = order.makespan_floor_s(np.asarray(plan.f), np.asarray(plan.b), np.asarray(plan.w), p2p)
        return _Raw(lay, v, order, plan, p2p, span, span, mem_lb, len(self.zeros))

    def _bound(self, raw: _Raw, push, capacity: float) -> None:
        """A schedule's full bounds: memory from the placement, optimizer and DP-sync floors."""
        node = self._variant(raw.lay, raw.variant, raw.order, raw)
        if node.mem > capacity * (1 + bounds.SAFETY):
            self.pruned_memory += node.count
        else:
            push(node)

    def _variant(self, lay: Layout, v: space.Variant, order: bounds.Order, raw: _Raw | None = None) -> _Variant:
        """A schedule bounded over every ZeRO stage searched (their least memory and time)."""
        if raw is None or raw.order is not order:
            raw = self._raw(lay, v, order, 0.0)
        plan, p2p, span = raw.plan, raw.p2p, raw.span
        pl = order.placement
        f, b, w = np.asarray(plan.f), np.asarray(plan.b), np.asarray(plan.w)
        act, exact = order.activation_peak(np.asarray(plan.activation_bytes), lay.b_frees)
        slot = order.slot_ceiling_s(f, b, w)
        key = (pl.devices_of, order.used, id(plan))
        held = self.held.get(key)
        if held is None:  # parameters per device, by the estimate layer's code, once per placement and plan
            held = self.held[key] = (devices.held(pl, order.directions, plan.params),
                                     devices.held(pl, order.directions, plan.expert_params))  # fmt: skip
        params, expert = held
        zero = max(self.zeros)
        st = devices.static_bytes(lay, self.gpu, params, expert, order.param_versions, zero)
        mem = float((st["weight"] + st["grad"] + st["optimizer"] + act).max())
        # ZeRO 0 all-reduces, ZeRO ≥ 1 reduce-scatters and all-gathers: the smaller exposure bounds all stages
        dp = min(self._dp_floor(lay, pl, plan, params, expert, z, slot) for z in {_sync_mode(z) for z in self.zeros})
        lb = span + float(devices.optimizer_s(lay, self.gpu, params, expert, zero).max()) + dp
        return _Variant(lay, v, order, plan, p2p, span, act, exact, lb, mem, len(self.zeros), params, expert, slot)

    def _dp_floor(self, lay: Layout, pl, plan, params, expert, zero: int, slot: np.ndarray) -> float:
        """A lower bound on the exposed DP sync, by the estimate layer's own code, shared by layouts with
        the same DP groups, parameters per device and slots: a device's exposed reduction only grows as
        its last (and first) op gets shorter, so every op is taken at the longest a slot of that device
        can last; the device that ends the makespan then still waits at least the least of these."""
        key = (lay.tp, lay.cp, lay.dp, lay.ep, lay.nvlink_dp_pp, _sync_mode(zero), pl.devices_of, id(plan),
               tuple(slot))  # fmt: skip
        out = self.dp_floors.get(key)
        if out is None:
            exposed = devices.dp_exposed_s(self.model, self.gpu, lay, pl, params, expert, slot, slot, zero)
            out = self.dp_floors[key] = float(np.min(exposed))
        return out

    def _leaves(self, node: _Variant, push, capacity: float) -> None:
        """A schedule into its ZeRO stages, with the exact activation peak once the order is built."""
        lay, v = node.lay, node.variant
        if not node.exact and not v.uses_costs:
            order = self._order(lay, v, True)
            node = self._variant(lay, v, order)
            if node.mem > capacity * (1 + bounds.SAFETY):
                self.pruned_memory += node.count
                return
        pl, versions = node.order.placement, node.order.param_versions
        for z in self.zeros:
            st = devices.static_bytes(lay, self.gpu, node.params, node.expert, versions, z)
            mem = float((st["weight"] + st["grad"] + st["optimizer"] + node.act).max())
            opt = float(devices.optimizer_s(lay, self.gpu, node.params, node.expert, z).max())
            lb = node.span + opt + self._dp_floor(lay, pl, node.plan, node.params, node.expert, z, node.slot)
            leaf = _Leaf(lay, z, v, node.order, lb, mem, node.exact, (lay, v.vpp, z == 3))
            if mem > capacity * (1 + bounds.SAFETY):
                self.pruned_memory += 1
            else:
                push(leaf)

    # --- simulation ---------------------------------------------------------------------------

    def _simulate(self, leaf: _Leaf) -> None:
        if leaf.variant.uses_costs:
            if leaf.run_key not in self.built:  # a new order to search: its ops count against the budget
                if self.searching_ops >= self.budget_ops:
                    self.cut += 1
                    return
                self.built.add(leaf.run_key)
                self.searching_ops += (
                    leaf.order.stages * leaf.lay.microbatches * (3 if leaf.variant.split_backward else 2)
                )
            est = totals(simulate_layout(self.model, self.gpu, leaf.layout))
        else:
            run = self.runs.get(leaf.run_key)
            est = totals(simulate_layout(self.model, self.gpu, leaf.layout, schedule=leaf.order.schedule, run=run))
            self.runs[leaf.run_key] = est.run
        self.simulated += 1
        peak = float(est.peak_bytes.max())
        if peak > self.capacity:
            self.over += 1
            return
        t_s = est.iteration_s
        key = rank_key(leaf.layout)
        sig = (t_s, est.peak_bytes.tobytes())
        if self.same.get(sig) in self.estimates:  # the same numbers as a row kept: one of its equivalents
            self.equivalents.setdefault(self.same[sig], []).append(leaf.layout)
            return
        keep = False
        if len(self.best) < self.top or (t_s, key) < (-self.best[0][0], _unneg(self.best[0][1])):
            heapq.heappush(self.best, (-t_s, _neg(key)))
            keep = True
            if len(self.best) > self.top:
                _, nk = heapq.heappop(self.best)
                self._forget(_unneg(nk))
        if self.pareto:
            gone = self.front.add(t_s, peak, key)
            keep = keep or key not in gone
            for k in gone:
                if k != key:
                    self._forget(k)
        if keep:
            self.estimates[key] = est
            self.same[sig] = key
            self.equivalents.pop(key, None)

    def _forget(self, key: tuple) -> None:
        if key in self.estimates and not self._kept(key):
            del self.estimates[key]

    def _kept(self, key: tuple) -> bool:
        return any(_unneg(nk) == key for _, nk in self.best) or key in self.front.keys

    # --- errors -------------------------------------------------------------------------------

    def _nothing_divides(self) -> str:
        m = self.model
        restricted = [
            k for k in ("tp", "cp", "pp", "dp", "ep", "vpp", "mbs", "schedules", "recompute", "sequence_parallel",
                        "zero", "tp_mode", "tp2d", "summa_blocks", "max_microbatches", "max_pp", "max_mbs")
            if getattr(self.opt, k) is not None
        ]  # fmt: skip
        if not self.opt.uneven:
            restricted.append("even-only")
        hint = f"relax the restrictions ({', '.join(restricted)})" if restricted else _nearby(m, self.gpus, self.gbs)
        return (
            f"no layout of {self.gpus} GPUs divides: tp·cp·pp·dp must equal the GPU count, with tp dividing the "
            f"{m.heads} heads and {m.kv_heads} KV heads, pp ≤ {m.layers} layers, dp dividing the global batch "
            f"{self.gbs} and a schedule accepting the microbatch count; {hint}"
        )

    def _nothing_fits(self, groups: list[_Group]) -> str:
        est = closest(self, groups)
        cap = gib(self.capacity)
        head = f"{gib(self.gpu.reserve_bytes)} reserve" + (
            f", {self.opt.headroom:.0%} kept free" if self.opt.headroom else ""
        )
        if est is None:
            return f"no layout fits in {cap} ({head})"
        peak = float(est.peak_bytes.max())
        lay = est.layout
        return (
            f"no layout fits in {cap} per GPU ({head}): the closest, {describe(lay)}, needs {gib(peak)}, "
            f"{gib(peak - self.capacity)} over; use more GPUs or a GPU with more memory"
            + ("" if self.opt == space.Options(headroom=self.opt.headroom) else ", or relax the restrictions")
        )

    # --- result -------------------------------------------------------------------------------

    def result(self, seconds: float) -> SearchResult:
        ranked = sorted((-t, _unneg(nk)) for t, nk in self.best)
        limit = (1 + self.pareto_within) * self._best_time()
        shown = [k for t, k in zip(self.front.t, self.front.keys) if t <= limit]
        done = {k: complete(self.estimates[k]) for k in {k for _, k in ranked} | set(shown)}  # the rest of each
        same = self.equivalents
        rows = [row_of(done[k], i + 1, same.get(k, ())) for i, (_, k) in enumerate(ranked)]
        front = [row_of(done[k], None, same.get(k, ())) for k in shown]
        return SearchResult(
            model=self.model.name, gpu=self.gpu.name, gpus=self.gpus, global_batch=self.gbs, layouts=rows,
            pareto=front, searched=self.searched, pruned=self.pruned_time + self.pruned_memory,
            pruned_by_time=self.pruned_time, pruned_by_memory=self.pruned_memory, simulated=self.simulated,
            over_capacity=self.over, budget_cut=self.cut, budget_ops=self.budget_ops, seconds=seconds,
            cancelled=self.cancelled, capacity_bytes=self.capacity, headroom=self.opt.headroom,
            inputs={"model": asdict(self.model), "gpu": asdict(self.gpu), "options": asdict(self.opt)},
        )  # fmt: skip


def _sync_mode(zero: int) -> int:
    """ZeRO stages that synchronise alike: 0 all-reduces at the end, 1 and 2 reduce-scatter and
    all-gather at the end, 3 gathers and reduce-scatters layer by layer inside the ops."""
    return zero if zero in (0, 3) else 1


def _push_by_time(heap: list, seq, node) -> None:
    heapq.heappush(heap, (node.lb_s, next(seq), node))


def closest(s: _Search, groups: list[_Group]) -> Totals | None:
    """The layout with the least simulated peak memory (best first on the memory bounds)."""
    heap = [(grp.mem_lb, next(s.seq), grp) for grp in groups]
    heapq.heapify(heap)
    while heap:
        _, _, node = heapq.heappop(heap)
        if isinstance(node, Totals):
            return node
        if isinstance(node, _Leaf):
            est = totals(simulate_layout(s.model, s.gpu, node.layout))
            heapq.heappush(heap, (float(est.peak_bytes.max()), next(s.seq), est))
            continue
        children: list = []
        s._children(node, partial(_push_by_time, children, s.seq), np.inf)
        for _, _, child in children:
            heapq.heappush(heap, (getattr(child, "mem", None) or child.mem_lb, next(s.seq), child))
    return None


def rank_key(lay: Layout) -> tuple:
    """Ties in iteration time are ranked by this, so the top k is one definite list."""
    return (lay.schedule, lay.tp, lay.cp, lay.pp, lay.dp, lay.ep, lay.vpp, lay.mbs, lay.recompute,
            lay.sequence_parallel, lay.zero, lay.layer_split or (), lay.tp_mode, lay.tp2d or (),
            lay.summa_blocks, lay.nvlink_dp_pp or (), lay.tp_comm_overlap)  # fmt: skip


class _Rev:
    """Reverses the order of a key inside a max-heap of (-time, key)."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __lt__(self, other):
        return self.k > other.k

    def __eq__(self, other):
        return self.k == other.k


def _neg(k):
    return _Rev(k)


def _unneg(r):
    return r.k


def describe(lay: Layout) -> str:
    split = f", layers {'/'.join(map(str, lay.layer_split))}" if lay.layer_split else ""
    vpp = f", vpp {lay.vpp}" if lay.vpp > 1 else ""
    sp = ", sequence parallel" if lay.sequence_parallel else ""
    sp += " (TP collectives overlapped)" if lay.tp_comm_overlap else ""
    if lay.tp_mode == "2d":
        sp += f", 2D tp {lay.tp2d[0]}×{lay.tp2d[1]}" + (
            f" in {lay.summa_blocks} SUMMA blocks" if lay.summa_blocks else ""
        )
    if lay.nvlink_dp_pp:
        sp += f", NVLink domain dp {lay.nvlink_dp_pp[0]} × pp {lay.nvlink_dp_pp[1]}"
    return (f"{lay.schedule} tp {lay.tp} pp {lay.pp} dp {lay.dp} cp {lay.cp}{vpp} mbs {lay.mbs}, recompute "
            f"{lay.recompute}{sp}, ZeRO {lay.zero}{split}")  # fmt: skip


def _nearby(model: Model, gpus: int, gbs: int) -> str:
    near = [n for n in range(max(1, gpus - 256), gpus + 257) if n != gpus and _divides(model, n, gbs)]
    near.sort(key=lambda n: (abs(n - gpus), n))
    return "try a GPU count such as " + " or ".join(map(str, sorted(near[:2]))) if near else "change the GPU count"


def _divides(model: Model, n: int, gbs: int) -> bool:
    """Some tp·pp·dp = n with tp dividing the heads, pp ≤ layers and dp dividing the global batch."""
    for tp in space.divisors(n):
        if model.heads % tp or model.kv_heads % tp:
            continue
        for pp in space.divisors(n // tp):
            if pp <= model.layers and gbs % (n // tp // pp) == 0:
                return True
    return False


__all__ = ["closest", "describe", "rank_key", "schedules", "search"]
