"""The space of layouts: every (tp, tp mode and 2D grid, cp, pp, dp, ep, mbs, recompute, sequence
parallel, TP overlap) group that divides, and in each group every schedule (with its chunks), layer
split and ZeRO stage the registry accepts. Options restrict any dimension; ``None`` means every value
that divides (TP overlap: off, and on wherever the layout allows it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from math import gcd, lcm

import numpy as np

from .. import schedules
from ..errors import InputError
from ..estimate import layer
from ..estimate.devices import dp_groups, pipeline_same_domain
from ..estimate.iteration import shape_of
from ..estimate.specs import RECOMPUTE, TP_MODES, Gpu, Layout, Model, SpecError
from ..ir import Placement

# the Layout fields a searched layout gets from the search (``Options.carry`` may set only the others)
SEARCHED = frozenset(("tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "gbs", "schedule", "recompute",
                      "sequence_parallel", "zero", "tp_mode", "tp2d", "summa_blocks", "nvlink_dp_pp",
                      "tp_comm_overlap", "layer_split"))  # fmt: skip
SEARCHING = "v-*, zb-auto"  # schedules whose order is searched under the op times (uses_costs)


@dataclass(frozen=True)
class Options:
    """Restrictions of the search; every dimension left None takes every value that divides."""

    tp: Sequence[int] | None = None
    cp: Sequence[int] | None = None  # default: 1, and splits that leave ≥ 2,048 tokens per GPU
    pp: Sequence[int] | None = None
    dp: Sequence[int] | None = None
    ep: Sequence[int] | None = None
    vpp: Sequence[int] | None = None  # chunks per device of interleaved schedules (default 2..8)
    mbs: Sequence[int] | None = None
    schedules: Sequence[str] | None = None
    recompute: Sequence[str] | None = None
    sequence_parallel: Sequence[bool] | None = None
    zero: Sequence[int] | None = None  # default 0, 1, 2 (ZeRO-3, its per-layer gathers timed, only when asked)
    uneven: bool = True  # stage counts that do not divide the layers get a balanced split, lighter edges
    headroom: float = 0.0  # fraction of HBM kept free
    tp_within_domain: bool = False  # keep every TP group inside one NVLink domain
    # NERSC's NVLink placements (seed 003) beside Megatron's rank order: dp and/or pp ranks that share the
    # domain with the whole tp·cp group, every split of the room left (see ``placements``)
    nvlink_placements: bool = True
    # tensor parallelism "1d" (Megatron) and/or "2d" (SUMMA over hidden × sequence); default 1d only,
    # or 2d only when tp2d is given. 2D takes every (R, C) grid with R·C = tp > 1 (or those of tp2d),
    # each with the SUMMA block counts of summa_blocks (default 0: the least, lcm(R, C))
    tp_mode: Sequence[str] | None = None
    tp2d: Sequence[tuple[int, int]] | None = None
    summa_blocks: Sequence[int] | None = None
    # TP collectives overlapped with the GEMMs (Megatron --tp-comm-overlap), searched off and on where the
    # layout allows it (1D, sequence parallel, the TP group inside one NVLink domain: ``overlaps``); True or
    # (True,) pins it on wherever allowed (the others run without), False or (False,) pins it off
    tp_comm_overlap: Sequence[bool] | bool | None = None
    # the most microbatches per layout (gbs / (dp·mbs)), pipeline devices and micro-batch size: the page
    # searches only the layouts it can draw (each simulation's size and the space are then bounded);
    # None: every one that divides
    max_microbatches: int | None = None
    max_pp: int | None = None
    max_mbs: int | None = None
    # the most shapes (tp, cp, pp, dp, ep, mbs, recompute, sp) checked against the model: past it the
    # listing stops with SpaceTooLarge (a shape costs ~40 µs to check; the page bounds its listing time)
    max_shapes: int | None = None
    # Layout fields every searched layout takes as given, e.g. (("precision", "fp8"),): advice keeps the
    # user's precision, DP overlap, b_frees and pair overlap (``ppviz.search.advice``)
    carry: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        for name in ("tp", "cp", "pp", "dp", "ep", "vpp", "mbs", "zero"):
            v = getattr(self, name)
            if v is None:
                continue
            v = tuple(v)
            if not v or any(
                isinstance(x, bool) or not isinstance(x, int) or x < (0 if name == "zero" else 1) for x in v
            ):
                raise InputError(
                    f"--{name} wants whole numbers ≥ {0 if name == 'zero' else 1} (got {list(v)})", field=name
                )
            object.__setattr__(self, name, v)
        for name in ("max_microbatches", "max_pp", "max_mbs", "max_shapes"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise InputError(f"{name} wants a whole number ≥ 1 (got {v!r})", field=name)
        if self.zero is not None and any(z > 3 for z in self.zero):
            raise InputError(f"--zero takes stages 0, 1, 2 and 3 (got {list(self.zero)})", field="zero")
        if self.recompute is not None:
            bad = [r for r in self.recompute if r not in RECOMPUTE]
            if bad or not self.recompute:
                raise InputError(
                    f"--recompute takes {', '.join(RECOMPUTE)} (got {', '.join(map(str, bad)) or 'none'})",
                    field="recompute",
                )
            object.__setattr__(self, "recompute", tuple(self.recompute))
        if self.schedules is not None:
            for s in self.schedules:
                schedules.get(s)  # a clear message for an unknown name
            if not self.schedules:
                raise InputError("--schedules needs at least one schedule name (see `ppviz list`)", field="schedules")
            object.__setattr__(self, "schedules", tuple(dict.fromkeys(self.schedules)))
        if self.sequence_parallel is not None:
            object.__setattr__(self, "sequence_parallel", tuple(bool(x) for x in self.sequence_parallel))
        self._check_tp_mode()
        self._check_tp_overlap()
        object.__setattr__(self, "carry", tuple(tuple(pair) for pair in self.carry))
        bad = [k for k, _ in self.carry if k in SEARCHED or k not in Layout.__dataclass_fields__]
        if bad:
            raise InputError(f"carry takes layout fields the search does not set (got {', '.join(bad)})", field="carry")
        if isinstance(self.headroom, bool) or not isinstance(self.headroom, (int, float)) or not 0 <= self.headroom < 1:
            raise InputError(
                f"headroom is the fraction of HBM kept free: give a number in [0, 1) (got {self.headroom!r})",
                field="headroom",
            )

    def _check_tp_overlap(self) -> None:
        v = self.tp_comm_overlap
        if v is None:
            return
        v = (v,) if isinstance(v, bool) else tuple(v) if isinstance(v, (tuple, list)) else None
        if not v or any(not isinstance(x, bool) for x in v):
            raise InputError(
                f"tp_comm_overlap takes true, false or both (got {self.tp_comm_overlap!r})", field="tp_comm_overlap"
            )
        object.__setattr__(self, "tp_comm_overlap", tuple(dict.fromkeys(v)))

    def _check_tp_mode(self) -> None:
        if self.tp_mode is not None:
            modes = tuple(dict.fromkeys(self.tp_mode))
            if not modes or any(m not in TP_MODES for m in modes):
                raise InputError(
                    f"--tp-mode takes {', '.join(TP_MODES)} (got {', '.join(map(str, modes)) or 'none'})",
                    field="tp_mode",
                )
            object.__setattr__(self, "tp_mode", modes)
        if self.tp2d is not None:
            grids = []
            for g in self.tp2d:
                g = tuple(g) if isinstance(g, (tuple, list)) else (g,)
                if len(g) != 2 or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in g):
                    raise InputError(
                        field="tp2d",
                        message=f"--tp2d wants grids of two whole numbers ≥ 1, hidden,sequence ways, "
                        f"e.g. 4,2 (got {g})",
                    )
                grids.append(g)
            if not grids:
                raise InputError("--tp2d needs at least one grid, e.g. 4,2", field="tp2d")
            object.__setattr__(self, "tp2d", tuple(dict.fromkeys(grids)))
        if self.summa_blocks is not None:
            v = tuple(self.summa_blocks)
            if not v or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in v):
                raise InputError(
                    f"--summa-blocks wants whole numbers ≥ 0 (0: lcm of the grid sides) (got {list(v)})",
                    field="summa_blocks",
                )
            object.__setattr__(self, "summa_blocks", v)
        if "2d" not in self.modes and (self.tp2d is not None or self.summa_blocks is not None):
            raise InputError(
                "--tp2d and --summa-blocks are for 2D tensor parallelism: add --tp-mode 2d (or 1d,2d)", field="tp_mode"
            )

    @property
    def modes(self) -> tuple[str, ...]:
        """The tensor-parallel modes searched: tp_mode, else 2d when tp2d is given, else 1d."""
        return self.tp_mode or (("2d",) if self.tp2d is not None else ("1d",))


@dataclass(frozen=True)
class Group:
    """Layouts that share their per-layer costs: they differ in schedule, chunks and ZeRO stage."""

    tp: int
    cp: int
    pp: int
    dp: int
    ep: int
    mbs: int
    recompute: str
    sequence_parallel: bool
    microbatches: int
    tp_mode: str = "1d"
    tp2d: tuple[int, int] | None = None  # 2D grid (hidden ways, sequence ways)
    summa_blocks: int = 0  # 0: lcm of the grid sides
    nvlink_dp_pp: tuple[int, int] | None = None  # None: Megatron's rank order
    tp_comm_overlap: bool = False  # TP collectives overlapped with the GEMMs (see ``overlaps``)

    def layout(self, gbs: int, **kw) -> Layout:
        return Layout(tp=self.tp, pp=self.pp, dp=self.dp, cp=self.cp, ep=self.ep, mbs=self.mbs, gbs=gbs,
                      sequence_parallel=self.sequence_parallel, tp_comm_overlap=self.tp_comm_overlap,
                      recompute=self.recompute, tp_mode=self.tp_mode,
                      tp2d=self.tp2d, summa_blocks=self.summa_blocks, nvlink_dp_pp=self.nvlink_dp_pp,
                      **kw)  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """One schedule of a group: its name, chunks per device (vpp), stage count and layer split."""

    schedule: str
    vpp: int
    stages: int
    layer_split: tuple[int, ...] | None
    uses_costs: bool
    split_backward: bool


@dataclass
class Space:
    groups: list[Group] = field(default_factory=list)
    invalid: int = 0  # (tp, cp, pp, dp, ...) combinations refused by the model's shape
    checked: int = 0  # combinations checked against the model's shape


class SpaceTooLarge(ValueError):
    """The listing passed ``Options.max_shapes`` shapes checked."""


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def balanced_split(layers: int, stages: int) -> tuple[int, ...] | None:
    """Layers per stage as even as possible, the lighter stages at both edges (they also hold the
    embedding and the output layer; Llama 3 405B's 16 stages of 8 with 7 on the first and the last
    is this split). None when the layers divide evenly."""
    q, r = divmod(layers, stages)
    if r == 0 or q == 0:
        return None
    light = stages - r
    order = []  # stage indices from the edges inwards: 0, S-1, 1, S-2, ...
    lo, hi = 0, stages - 1
    while lo <= hi:
        order.append(lo)
        if hi != lo:
            order.append(hi)
        lo, hi = lo + 1, hi - 1
    split = [q + 1] * stages
    for s in order[:light]:
        split[s] = q
    return tuple(split)


def groups(model: Model, gpus: int, gbs: int, opt: Options, domain: int) -> Space:
    """Every group whose sizes multiply to ``gpus``, divide the model and the global batch."""
    space = Space()
    modes = opt.modes
    one_d = [t for t in divisors(gpus) if model.heads % t == 0 and model.kv_heads % t == 0] if "1d" in modes else []
    two_d = [t for t in divisors(gpus) if t > 1] if "2d" in modes else []
    for tp in opt.tp or sorted(set(one_d + two_d)):
        if gpus % tp or (opt.tp_within_domain and tp > domain):
            continue
        tps = [("1d", None, 0)] if "1d" in modes and (opt.tp or tp in one_d) else []
        if "2d" in modes and tp > 1:
            tps += [("2d", grid, nb) for grid, nb in grids(tp, opt)]
        for mode, grid, nb in tps:
            _tp_groups(model, gpus, gbs, opt, space, tp, mode, grid, nb, domain)
    return space


def grids(tp: int, opt: Options) -> list[tuple[tuple[int, int], int]]:
    """The 2D grids (R, C) with R·C = tp (or those of opt.tp2d), each with its distinct SUMMA block
    counts (0 stands for lcm(R, C); a count equal to it is the same layout, kept once)."""
    out = []
    for r in divisors(tp):
        grid = (r, tp // r)
        if opt.tp2d is not None and grid not in opt.tp2d:
            continue
        seen = set()
        for nb in opt.summa_blocks or (0,):
            eff = nb or lcm(*grid)
            if eff % grid[0] or eff % grid[1] or eff in seen:  # each panel inside one GPU's block
                continue
            seen.add(eff)
            out.append((grid, nb))
    return out


def _tp_groups(model, gpus, gbs, opt, space, tp, mode, grid, nb, domain) -> None:
    # 2D splits the sequence over its C side itself: cp 1 and no Megatron sequence parallel
    cps = opt.cp or [c for c in divisors(gpus // tp) if c == 1 or model.seq // c >= 2048]
    for cp in cps:
        if (gpus // tp) % cp or (mode == "2d" and cp > 1):
            continue
        rest = gpus // (tp * cp)
        for pp in opt.pp or divisors(rest):
            if rest % pp or pp > model.layers or pp > (opt.max_pp or pp):
                continue
            dp = rest // pp
            if (opt.dp and dp not in opt.dp) or gbs % dp:
                continue
            eps = [1] if not model.moe else (opt.ep or [e for e in divisors(dp) if model.experts % e == 0])
            for ep in eps:
                places = placements(tp, cp, dp, pp, ep, domain, model.moe) if opt.nvlink_placements else [None]
                for mbs in opt.mbs or divisors(gbs // dp):
                    if (
                        (gbs // dp) % mbs
                        or gbs // (dp * mbs) > (opt.max_microbatches or gbs)
                        or mbs > (opt.max_mbs or mbs)
                    ):
                        continue
                    for rec in opt.recompute or default_recompute(model):
                        sps = opt.sequence_parallel or ((False, True) if tp > 1 else (False,))
                        for sp in sps:
                            if mode == "2d" and sp:
                                continue
                            g = Group(tp, cp, pp, dp, ep, mbs, rec, sp, gbs // (dp * mbs), mode, grid, nb)
                            space.checked += 1
                            if opt.max_shapes is not None and space.checked > opt.max_shapes:
                                raise SpaceTooLarge(f"more than {opt.max_shapes:,} layout shapes to check")
                            if not _valid_shape(model, g, gbs):
                                space.invalid += 1
                                continue
                            space.groups += [replace(g, tp_comm_overlap=ov, nvlink_dp_pp=place)
                                             for ov in overlaps(opt, g, domain) for place in places]  # fmt: skip


def overlaps(opt: Options, g: Group, domain: int) -> tuple[bool, ...]:
    """The TP overlap settings searched for a group: on only where the layout allows it (Megatron's
    --tp-comm-overlap needs sequence parallel, and Transformer Engine's userbuffers a TP group inside
    one NVLink domain: ``layer.tp_overlap_possible``), off always unless pinned on."""
    allowed = g.tp_mode == "1d" and g.sequence_parallel and layer.tp_overlap_possible(g.tp, domain)
    wanted = opt.tp_comm_overlap or (False, True)
    return tuple(v for v in wanted if allowed or not v) or (False,)


@lru_cache(maxsize=4096)
def placements(tp: int, cp: int, dp: int, pp: int, ep: int, domain: int, moe: bool) -> list[tuple[int, int] | None]:
    """How the NVLink domain is shared (NERSC's candidates, seed 003): Megatron's rank order (None), and
    every (dp ranks, pp ranks) that fills the room the tp·cp group leaves in the domain as far as the
    divisors allow (none of them can grow), the dp ranks holding whole expert-parallel groups. A split
    that times every group exactly as Megatron's order does is that order, kept once."""
    if tp * cp >= domain:
        return [None]
    room = domain // (tp * cp)
    pairs = [(a, b) for a in divisors(dp) for b in divisors(pp) if a * b <= room and a % ep == 0]
    out: list[tuple[int, int] | None] = [None]
    for pair in pairs:
        if any(a >= pair[0] and b >= pair[1] and (a, b) != pair for a, b in pairs):
            continue
        if not _same_as_megatron(tp, cp, dp, pp, ep, domain, moe, pair):
            out.append(pair)
    return out


def _same_as_megatron(tp, cp, dp, pp, ep, domain, moe, pair) -> bool:
    g = Gpu(nvlink_domain=domain)
    mega = Layout(tp=tp, cp=cp, dp=dp, pp=pp, ep=ep)
    place = replace(mega, nvlink_dp_pp=pair)
    groups = 2 if moe else 1  # a dense model has no routed-expert group
    if dp_groups(mega, g)[:groups] != dp_groups(place, g)[:groups]:
        return False
    return all(
        pipeline_same_domain(mega, g, a, b) == pipeline_same_domain(place, g, a, b)
        for a in range(pp)
        for b in range(pp)
    )


def default_recompute(model: Model) -> tuple[str, ...]:
    """With flash attention selective recompute has nothing left to recompute (the estimate layer
    gives it the same time and bytes as none), so it is searched only when asked for."""
    return ("none", "full") if model.flash_attention else RECOMPUTE


def _valid_shape(model: Model, g: Group, gbs: int) -> bool:
    try:
        layer.check(model, shape_of(g.layout(gbs)))
    except SpecError:
        return False
    return True


def variants(model: Model, g: Group, opt: Options) -> list[Variant]:
    """Every schedule (and chunk count) the registry accepts for this group's pp and microbatches."""
    return list(_variants(model.layers, g.pp, g.microbatches, opt.schedules, opt.vpp, opt.uneven))


@cache
def probe(name: str):
    """The schedule built small (2 devices, 8 microbatches): its stages per device and placement style."""
    spec = schedules.get(name)
    return schedules.build(name, 2, 8, **({"chunks": 2} if spec.param("chunks") is not None else {}))


def stages_per_device(name: str) -> int:
    sched = probe(name)
    return sched.stages // sched.devices


def placement(name: str, pp: int, vpp: int) -> Placement:
    """The placement the schedule uses on pp devices (from its probe's style)."""
    style = probe(name).placement.style
    if style == "standard":
        return Placement.standard(pp)
    if style == "loop":
        return Placement.looped(pp, vpp)
    if style == "v":
        return Placement.vshape(pp)
    if style == "dualpipe":
        return Placement.dualpipe(pp)
    raise ValueError(f"{name}: unknown placement style {style!r}")


@lru_cache(maxsize=4096)
def _variants(layers: int, pp: int, m: int, names, vpps, uneven: bool) -> tuple[Variant, ...]:
    out = []
    names = names or tuple(schedules.REGISTRY)
    if pp == 1:  # one device: every schedule runs the same ops in the same order; keep one
        names = ("1f1b",) if "1f1b" in names else names[:1]
    for name in names:
        spec = schedules.get(name)
        if spec.param("chunks") is not None:
            choices = [v for v in (vpps or range(2, 9)) if v >= 1]
        else:
            choices = [spec.chunks or 1]
        for v in choices:
            stages = pp * v if spec.param("chunks") is not None else pp * stages_per_device(name)
            if stages > layers:
                continue
            split = balanced_split(layers, stages)
            if split is not None and not uneven:
                continue
            params = {"chunks": v} if spec.param("chunks") is not None else {}
            try:
                schedules.registry.resolve(spec, pp, m, params)
            except ValueError:
                continue
            out.append(Variant(name, v, stages, split, spec.uses_costs, spec.split_backward))
    return tuple(out)


def order_actions(model: Model, gpus: int, gbs: int, opt: Options) -> int:
    """An upper bound on the actions of all the schedule orders the search may build (each distinct
    schedule, pp, microbatch count and chunks once), what its memory grows with. Counted in closed
    form over the divisors, without enumerating layouts: every pp that divides the GPUs (≤ layers)
    against every microbatch count m that divides the batch and is at most gbs / dp for the least
    dp the model's tp and cp leave, every schedule and chunk count whose stages fit the layers and
    whose size the registry accepts (its other checks are left out, so this over-counts)."""
    pps = [p for p in (opt.pp or divisors(gpus)) if gpus % p == 0 and p <= model.layers]
    tp_cp = _most_tp(model, opt) * (max(opt.cp) if opt.cp else max(1, model.seq // 2048))
    least_dp = [min((d for d in (opt.dp or divisors(gpus // p)) if (gpus // p) % d == 0 and (gpus // p) // d <= tp_cp
                     and gbs % d == 0), default=0) for p in pps]  # fmt: skip
    # m = gbs / (dp · mbs): a divisor of gbs / mbs
    ms = np.array(sorted({m for b in (opt.mbs or (1,)) if gbs % b == 0 for m in divisors(gbs // b)}), dtype=float)
    most_m = np.array([gbs // d if d else 0 for d in least_dp], dtype=float)
    pps = np.array(pps, dtype=float)
    names = opt.schedules or tuple(schedules.REGISTRY)
    total = 0.0
    for name in names:
        spec = schedules.get(name)
        chunked = spec.param("chunks") is not None
        kinds = 3 if spec.split_backward else 2
        for v in [x for x in (opt.vpp or range(2, 9)) if x >= 1] if chunked else [stages_per_device(name)]:
            rows = (pps * v <= model.layers) & ((pps > 1) | (name == names[0]))  # one schedule on one device
            size = np.outer(pps[rows] * v, ms) * kinds
            keep = (size <= schedules.MAX_ACTIONS) & (ms[None, :] <= most_m[rows, None])
            total += float(size[keep].sum())
    return int(total)


def _most_tp(model: Model, opt: Options) -> int:
    """The largest tp the model's shape allows: 1D divides the heads, KV heads, FFN and vocabulary;
    2D's hidden side does, and its sequence side is at most the SUMMA blocks, which divide the hidden."""
    if opt.tp:
        return max(opt.tp)
    most = gcd(model.heads, model.kv_heads, model.ffn, model.vocab)
    return most * model.hidden if "2d" in opt.modes else most
