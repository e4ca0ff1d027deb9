"""What the search view shows for a search: ``ppviz.search``'s ranking as table rows, and the scatter of
iteration time against peak GiB with the Pareto front and the capacity line. Plain functions, no Dash.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import ppviz
from ppviz import figures
from ppviz.estimate import specs
from ppviz.estimate.iteration import resolve
from ppviz.search import result, space
from ppviz.units import GIB

from ...common import cluster, limits
from . import state as search_state
from .state import SearchState

EXACT = ("iteration_s", "tokens_per_s", "mfu", "tflops_per_gpu", "bubble_fraction", "capacity_bytes")
MAX_MBS = int(cluster.LAYOUT_FIELDS["mbs"].high)  # the model & cluster view's largest micro-batch size


def options(state: SearchState) -> dict:
    """The search's restrictions: the view's, and layouts the model & cluster view can draw, of at most
    ``search_state.MAX_MICROBATCHES`` microbatches (``limits.MAX_DEVICES`` pipeline devices, its largest
    micro-batch size): each simulation's size, the runs it keeps, and the space are bounded."""
    return {
        "schedules": list(state.schedules) or None,  # none named: every schedule
        "tp_mode": list(state.tp_modes),
        "headroom": state.headroom / 100,
        "max_microbatches": search_state.MAX_MICROBATCHES,
        "max_pp": limits.MAX_DEVICES,
        "max_mbs": MAX_MBS,
    }


def groups(state: SearchState) -> int:
    """The layout groups in the search's space (layouts sharing their per-layer costs: a search's time
    and memory grow with them), refused past ``search_state.MAX_SHAPES`` shapes listed (the listing's
    own time: about 2 s of CPU at most) or ``search_state.MAX_GROUPS`` groups, saying what to change."""
    model, gpu = resolve(specs.model(state.model, seq=state.seq), state.gpu)
    opt = space.Options(**options(state), max_shapes=search_state.MAX_SHAPES)
    try:
        found = len(space.groups(model, state.gpus, state.gbs, opt, gpu.nvlink_domain).groups)
    except space.SpaceTooLarge:
        found = None
    search_state.check_groups(state, found)
    return found


def run(
    state: SearchState,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    deadline_s: float | None = None,
):
    """``ppviz.search`` of the view's inputs (``options``), refused with a message saying what to
    change past ``search_state.MAX_GROUPS``; stops (marked cancelled) at ``deadline_s`` seconds."""
    started = time.monotonic()

    def stop() -> bool:
        late = deadline_s is not None and time.monotonic() - started > deadline_s
        return late or (cancel is not None and cancel())

    groups(state)
    model = specs.model(state.model, seq=state.seq)
    return ppviz.search(
        model, state.gpu_spec(), state.gpus, state.gbs, top=state.top, progress=progress, cancel=stop, **options(state)
    )


def rows(result) -> list[dict]:
    """The grid's rows, fitting ones first: the ranked layouts with their figures rounded as shown (the
    iteration in one unit for the whole table: ms when every row is under 10 s, else s), the layout in
    words with its equivalents, and every field a row needs to open in the model & cluster view."""
    in_ms = all(r["iteration_s"] < 10 for r in result.layouts)
    out = []
    for r in sorted(result.layouts, key=lambda r: not r["fits"]):  # stable: the ranking within each
        row = dict(r)
        row.pop("breakdown_s", None)
        row.pop("peak_bytes", None)
        row.update(
            sp="on" if r["sequence_parallel"] else "off",
            iteration_s=round(r["iteration_s"], 4),
            tokens_per_s=round(r["tokens_per_s"]),
            mfu_pct=round(100 * r["mfu"], 1),
            peak_gib=round(r["peak_gib"], 2),
            bubble_pct=round(100 * r["bubble_fraction"], 1),
            tp_text=_tp_text(r),
            nvlink_text=f"{r['nvlink_dp_pp'][0]}×{r['nvlink_dp_pp'][1]}" if r.get("nvlink_dp_pp") else "Megatron",
            layout=layout_text(r),
            iteration=round(r["iteration_s"] * 1e3) if in_ms else round(r["iteration_s"], 3),
            iteration_unit="ms" if in_ms else "s",
            fits_text="yes" if r["fits"] else "no",
        )
        row["exact"] = {**{k: r[k] for k in EXACT}, "peak_bytes": max(r["peak_bytes"])}  # for the exports
        out.append(row)
    return out


def scatter(result):
    """Iteration time against peak GiB: the ranked layouts, the Pareto front marked, the usable capacity."""
    points: dict[str, tuple[float, float, bool, str]] = {}
    for front, group in ((False, result.layouts), (True, result.pareto)):
        for r in group:
            points[r["command"]] = (r["iteration_s"], r["peak_gib"], front, label(r))
    x, y, on, labels = zip(*points.values()) if points else ((), (), (), ())
    title = f"{result.model} on {result.gpus:,} × {result.gpu}: iteration time against peak memory"
    return figures.encode(
        figures.tradeoff(x, y, labels=labels, front=on, capacity=result.capacity_bytes / GIB, title=title)
    )


def summary(result) -> str:
    parts = [
        f"{result.searched:,} layouts in the space: {result.simulated:,} simulated, {result.pruned:,} skipped by a "
        f"proven bound ({result.pruned_by_time:,} by time, {result.pruned_by_memory:,} by memory), "
        f"{result.over_capacity:,} simulated over capacity; {result.seconds:.1f} s.",
        f"The page searches layouts of up to {search_state.MAX_MICROBATCHES} microbatches, pp ≤ {limits.MAX_DEVICES} "
        f"and micro-batch size ≤ {MAX_MBS:,} (the CLI searches them all).",
    ]
    parts += result.notes
    return " ".join(parts)


def _tp_text(row: dict) -> str:
    """The TP mode (exports): "1D", "1D, overlap" (TP collectives overlapped with the GEMMs) or "2D R×C"."""
    if row.get("tp2d"):
        return f"2D {row['tp2d'][0]}×{row['tp2d'][1]}"
    return "1D, overlap" if row.get("tp_comm_overlap") else "1D"


def layout_text(row: dict) -> str:
    """The layout column: ``tp 8 · pp 8 · dp 8 · mbs 1 · selective · SP · ZeRO 1``, then its equivalents."""
    parts = [f"{k} {row[k]}" for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs") if k in ("tp", "pp", "dp", "mbs")
             or row.get(k, 1) != 1]  # fmt: skip
    parts.append(f"recompute {row['recompute']}")
    if row["sequence_parallel"]:
        parts.append("SP, TP overlapped" if row.get("tp_comm_overlap") else "SP")
    if row.get("tp2d"):
        parts.append(f"2D {row['tp2d'][0]}×{row['tp2d'][1]}")
    if row.get("nvlink_dp_pp"):
        parts.append(f"NVLink dp {row['nvlink_dp_pp'][0]} × pp {row['nvlink_dp_pp'][1]}")
    parts.append(f"ZeRO {row['zero']}")
    same = result.equivalents_text(row)
    return " · ".join(parts) + (f" ({same})" if same else "")


def label(row: dict) -> str:
    """A layout in a few words: ``zb-v tp 8 pp 8 dp 8 mbs 1 selective zero 1``."""
    keys = ("tp", "pp", "dp", "cp", "vpp", "mbs")
    parts = [row["schedule"], *(f"{k} {row[k]}" for k in keys if k in ("tp", "pp", "dp", "mbs") or row.get(k, 1) != 1)]
    if row.get("tp2d"):
        parts.append(f"2D {row['tp2d'][0]}×{row['tp2d'][1]}")
    if row.get("tp_comm_overlap"):
        parts.append("TP overlap")
    if row.get("nvlink_dp_pp"):
        parts.append(f"NVLink dp {row['nvlink_dp_pp'][0]} × pp {row['nvlink_dp_pp'][1]}")
    return " ".join(parts + [row["recompute"], f"zero {row['zero']}"])
