"""The search's answer: ranked rows a table can show directly, and the JSON contract.

Every row carries the `ppviz estimate --json` contract fields of its layout (``iteration_s,
tokens_per_s, mfu, peak_bytes[], fits`` ...) and the layout itself under the names of
`ppviz estimate`'s flags, so any row reruns with that command to the same numbers (``command``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..estimate import specs
from ..estimate.command_line import command as estimate_command
from ..estimate.iteration import Estimate
from ..units import GIB

LAYOUT_FIELDS = ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "schedule", "recompute", "sequence_parallel", "zero",
                 "tp_mode", "tp2d", "summa_blocks", "nvlink_dp_pp", "tp_comm_overlap")  # fmt: skip


def command(est: Estimate) -> str:
    """The `ppviz estimate` command line that reproduces this row (``estimate.command_line.command``)."""
    return estimate_command(est.model, est.gpu, est.layout)


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
            "peak_gib": max(peak) / GIB,
            "capacity_bytes": est.capacity_bytes,
            "reserve_bytes": est.reserve_bytes,
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
    budget_ops: int
    seconds: float
    cancelled: bool
    capacity_bytes: float
    headroom: float
    notes: list[str] = field(default_factory=list)
    inputs: dict = field(
        default_factory=dict
    )  # every input: the model's and GPU's fields (the reserve among them), the options

    def __post_init__(self) -> None:
        if self.budget_cut:
            self.notes.append(
                f"the budget of the searching schedules (v-*, zb-auto), {self.budget_ops:,} ops of orders built, "
                "ran out: "
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
            "budget_ops": self.budget_ops,
            "complete": self.complete,
            "cancelled": self.cancelled,
            "capacity_bytes": self.capacity_bytes,
            "headroom": self.headroom,
            "inputs": self.inputs,
            "seconds": self.seconds,
            "notes": self.notes,
        }
