"""The search's answer: ranked rows a table can show directly, and the JSON contract.

Every row carries the `ppviz estimate --json` contract fields of its layout (``iteration_s,
tokens_per_s, mfu, peak_bytes[], fits`` ...) and the layout itself under the names of
`ppviz estimate`'s flags, so any row reruns with that command to the same numbers (``command``).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import InputError
from ..estimate import hf_config, specs
from ..estimate.iteration import Estimate

LAYOUT_FIELDS = ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "schedule", "recompute", "sequence_parallel", "zero",
                 "tp_mode", "tp2d", "summa_blocks", "nvlink_dp_pp", "tp_comm_overlap")  # fmt: skip


def model_flag(model: specs.Model) -> str:
    """``--model NAME`` for a preset; ``--hf-config PATH`` for a model read from a config.json."""
    if model.name in specs.model_names():
        return f"--model {model.name}"
    return f"--hf-config {shlex.quote(model.name)}"


@lru_cache(maxsize=8)
def _base_model(name: str) -> specs.Model | None:
    """The preset or config file a model was made from (read once, not once per ranked row)."""
    if name in specs.model_names():
        return specs.model(name)
    try:
        return hf_config.model_from_config(name, name=name)
    except InputError:  # not a file (a model built in Python): no base to state overrides against
        return None


def overrides(est: Estimate) -> list[str]:
    """The model and GPU override flags (``--seq 2048``, ``--hbm-gb 40`` ...) that turn the presets
    named ``est.model.name`` and ``est.gpu.name`` into the model and GPU this estimate used."""
    out = []
    gpu_base = specs.gpu(est.gpu.name) if est.gpu.name in specs.gpu_names() else None
    for spec, base in ((est.model, _base_model(est.model.name)), (est.gpu, gpu_base)):
        if base is None:
            continue
        for f in specs.override_flags(type(spec)):
            v = getattr(spec, f.field)
            if v == getattr(base, f.field):
                continue
            if f.type is bool:
                out.append(f"--{'' if v else 'no-'}{f.name}")
            else:
                out.append(f"--{f.name} {v if f.unit == 1 else _in_unit(v, f.unit)}")
    return out


def _in_unit(value: float, factor: float) -> str:
    """``value`` / ``factor`` written so that the CLI's ``float(text) * factor`` gives ``value`` back exactly."""
    x = value / factor
    for _ in range(64):
        if float(repr(x)) * factor == value:
            return repr(x)
        x = math.nextafter(x, math.inf if x * factor < value else -math.inf)
    return repr(value / factor)


def command(est: Estimate) -> str:
    """The `ppviz estimate` command line that reproduces this row: the presets, every model and GPU
    override the search was given, and the layout."""
    lay = est.layout
    parts = ["ppviz estimate", model_flag(est.model), f"--gpu {est.gpu.name}", *overrides(est)]
    parts += [f"--{k} {getattr(lay, k)}" for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs")]
    parts += [f"--gbs {lay.gbs}", f"--schedule {lay.schedule}", f"--recompute {lay.recompute}", f"--zero {lay.zero}"]
    if lay.precision != "bf16":
        parts.append(f"--precision {lay.precision}")
    if not lay.dp_overlap:
        parts.append("--no-dp-overlap")
    if lay.b_frees:
        parts.append(f"--b-frees {lay.b_frees!r}")
    if lay.pair_overlap:
        parts.append("--pair-overlap")
    if lay.sequence_parallel:
        parts.append("--sequence-parallel")
    if lay.tp_comm_overlap:
        parts.append("--tp-comm-overlap")
    if lay.tp_mode == "2d":
        parts.append(f"--tp-mode 2d --tp2d {lay.tp2d[0]},{lay.tp2d[1]}")
        if lay.summa_blocks:
            parts.append(f"--summa-blocks {lay.summa_blocks}")
    if lay.nvlink_dp_pp:
        parts.append(f"--nvlink-dp-pp {lay.nvlink_dp_pp[0]},{lay.nvlink_dp_pp[1]}")
    if lay.layer_split:
        parts.append("--layer-split " + ",".join(map(str, lay.layer_split)))
    return " ".join(parts)


def differences(lay: specs.Layout, other: specs.Layout) -> dict:
    """The layout fields in which ``other`` differs from ``lay``, with ``other``'s values (JSON's types)."""
    out = {}
    for k in (*LAYOUT_FIELDS, "layer_split"):
        a, b = getattr(lay, k), getattr(other, k)
        if a != b:
            out[k] = list(b) if isinstance(b, tuple) else b
    return out


def row_of(est: Estimate, rank: int | None, equivalents: Sequence[specs.Layout] = ()) -> dict:
    """One ranked layout: its layout fields, the estimate contract fields and the breakdown; and the
    ``equivalents``, layouts with the same time and peaks that differ only in settings that change
    nothing here (ZeRO over one data-parallel rank ...), each as the fields it differs in."""
    lay = est.layout
    peak = est.peak_bytes.tolist()
    row = {"rank": rank} if rank is not None else {}
    row.update({k: getattr(lay, k) for k in LAYOUT_FIELDS})
    row["tp2d"] = list(lay.tp2d) if lay.tp2d else None  # as JSON gives it back
    row["nvlink_dp_pp"] = list(lay.nvlink_dp_pp) if lay.nvlink_dp_pp else None
    row.update(
        {
            "gbs": lay.gbs,
            "layer_split": list(lay.layer_split) if lay.layer_split else None,
            "microbatches": est.microbatches,
            "stages": est.run.schedule.stages,
            "iteration_s": est.iteration_s,
            "tokens_per_s": est.tokens_per_s,
            "tflops_per_gpu": est.tflops_per_gpu,
            "mfu": est.mfu,
            "hfu": est.hfu,
            "peak_bytes": peak,
            "peak_gb": max(peak) / 1e9,
            "capacity_bytes": est.capacity_bytes,
            "fits": est.fits,
            "bubble_fraction": est.run.metrics.bubble_fraction,
            "breakdown_s": est.breakdown,
            "dp_sync_s": est.dp_sync_s,
            "optimizer_s": est.optimizer_s,
            "command": command(est),
            "equivalents": [differences(lay, other) for other in equivalents],
        }
    )
    return row


def equivalents_text(row: dict) -> str:
    """A row's equivalents in a few words: "same as zero 1; dp 4 cp 2 mbs 2" (near ones with their time)."""
    parts = []
    for e in row.get("equivalents", ()):
        words = " ".join(f"{k} {_value(v)}" for k, v in e.items() if k not in ("iteration_s", "peak_bytes"))
        if "iteration_s" in e:
            words += f" ({e['iteration_s']:.4g} s, peak {max(e['peak_bytes']) / 2**30:,.1f} GiB)"
        parts.append(words)
    return "same as " + "; ".join(parts) if parts else ""


def _value(v: object) -> str:
    if isinstance(v, list):
        return "/".join(map(str, v))
    return {True: "on", False: "off", None: "none"}.get(v, str(v)) if isinstance(v, (bool, type(None))) else str(v)


def group_near(rows: list[dict], within: float) -> list[dict]:
    """Rows at most ``within`` (a fraction) slower than a row ranked before them and differing from it in one
    layout setting (ZeRO 1 or 2, vpp 5 or 6, SP on or off) folded into its ``equivalents``, each with its own
    time and peaks; the rest ranked again."""
    kept: list[dict] = []
    for r in rows:
        host = next((k for k in kept if r["iteration_s"] <= k["iteration_s"] * (1 + within) and _one_apart(k, r)), None)
        if host is None:
            kept.append({**r, "equivalents": list(r.get("equivalents", ()))})
        else:
            near = {k: r[k] for k in (*LAYOUT_FIELDS, "layer_split") if r[k] != host[k]}
            host["equivalents"].append({**near, "iteration_s": r["iteration_s"], "peak_bytes": r["peak_bytes"]})
    for i, r in enumerate(kept):
        if "rank" in r:
            r["rank"] = i + 1
    return kept


def merge_same(rows: list[dict]) -> list[dict]:
    """Rows (in rank order, from several searches) equal in time and in every device's peak made one:
    the first, listing the others (and their equivalents) among its ``equivalents``."""
    kept: dict[tuple, dict] = {}
    for r in rows:
        sig = (r["iteration_s"], tuple(r["peak_bytes"]))
        host = kept.get(sig)
        if host is None:
            kept[sig] = {**r, "equivalents": list(r.get("equivalents", ()))}
            continue
        near = {k: r[k] for k in (*LAYOUT_FIELDS, "layer_split") if r[k] != host[k]}
        host["equivalents"] += [near, *({**near, **e} for e in r.get("equivalents", ()))]
    return list(kept.values())


def _one_apart(a: dict, b: dict) -> bool:
    return sum(a[k] != b[k] for k in LAYOUT_FIELDS) <= 1


@dataclass
class SearchResult:
    """Ranked layouts (``layouts``); the Pareto front of time against peak memory (``pareto``, time
    rising and peak falling, among the layouts at most ``pareto_within`` slower than the best); and
    what the search did: layouts in the space, pruned by a bound, simulated."""

    model: str
    gpu: str
    gpus: int
    global_batch: int
    layouts: list[dict]
    pareto: list[dict]
    searched: int
    pruned: int
    pruned_by_time: int
    pruned_by_memory: int
    simulated: int
    over_capacity: int
    budget_cut: int
    budget_s: float
    seconds: float
    cancelled: bool
    capacity_bytes: float
    headroom: float
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.budget_cut:
            self.notes.append(
                f"the {self.budget_s:g} s budget of the searching schedules (v-*, zb-auto) ran out: "
                f"{self.budget_cut:,} of their layouts were not simulated, so the ranking is exact for every "
                "other schedule only"
            )
        if self.cancelled:
            self.notes.append("cancelled: the ranking covers only what was simulated before the stop")

    @property
    def complete(self) -> bool:
        """True when the top k is exact over the whole space."""
        return not self.budget_cut and not self.cancelled

    def to_dict(self) -> dict:
        """The `ppviz search --json` contract."""
        return {
            "model": self.model,
            "gpu": self.gpu,
            "gpus": self.gpus,
            "global_batch": self.global_batch,
            "layouts": self.layouts,
            "pareto": self.pareto,
            "searched": self.searched,
            "pruned": self.pruned,
            "pruned_by_time": self.pruned_by_time,
            "pruned_by_memory": self.pruned_by_memory,
            "simulated": self.simulated,
            "over_capacity": self.over_capacity,
            "budget_cut": self.budget_cut,
            "budget_s": self.budget_s,
            "complete": self.complete,
            "cancelled": self.cancelled,
            "capacity_bytes": self.capacity_bytes,
            "headroom": self.headroom,
            "seconds": self.seconds,
            "notes": self.notes,
        }
