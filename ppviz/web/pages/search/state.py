"""The search view's inputs as plain data, their link form (the pairs of ``/search#…``) and bounds.

A link that carries them reruns the search. Every value is bounded before any work (clamped with a
note, or its default when unreadable), as the other views bound theirs. The GPU's four efficiencies
are the preset's unless a calibration profile set them (``common.profile_upload``); the link carries
them exactly (``repr``), so that the page, its exports and ``ppviz search`` give the same ranking.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from ppviz import REGISTRY
from ppviz.estimate import profile, specs

from ...common import commands, profile_upload, validation
from ...common.cluster import Field, ModelState, read_presets
from ...common.validation import read_hash

# none named: every schedule of the registry, as `ppviz search` (``ppviz.estimate.defaults.SEARCHED``)
DEFAULT_SCHEDULES: tuple[str, ...] = ()
TP_MODES = ("1d", "2d")
FIELDS: dict[str, Field] = {
    "gpus": Field("GPUs", 1, 16_384),
    "gbs": Field("global batch (sequences)", 1, 1_048_576),
    "seq": Field("sequence length", 1, 1_048_576),
    "headroom": Field("HBM kept free beyond the reserve (%)", 0, 90, False),
    "top": Field("layouts to rank", 1, 100),
}
# The page's search ranks layouts of at most this many microbatches (pp ≤ 64 and mbs ≤ 1024 as the model
# view draws them): a search's memory grows with its layouts' size, as it keeps the runs of its best
# (bench/bench_search_memory.py, Llama 3 405B on 8,192 GPUs, gbs 65,536, every schedule, top 100:
# 912 MB of RSS up to 512 microbatches, 545 MB up to 256). The CLI searches every layout.
MAX_MICROBATCHES = 256
# Layout groups (layouts sharing their per-layer costs) the page searches: a search's time grows with
# them (DeepSeek-V3 on 2,048 GPUs, 18,208 groups, every schedule: 22 s of CPU, 307 MB); and the shapes
# listed to find them (each checked against the model, ~20-40 µs): past either, the search is refused
# with what to change.
MAX_GROUPS = 20_000
MAX_SHAPES = 60_000
EFFICIENCIES: dict[str, Field] = {  # from a calibration profile (no box of their own): None is the preset's
    name: Field(f"{name.replace('_', ' ')} (calibration)", *profile_upload.EFFICIENCY_RANGE, False)
    for name in profile.FIELDS
}


@dataclass(frozen=True)
class SearchState:
    model: str = "llama3-70b"
    gpu: str = "h100-sxm"
    gpus: int = 512
    gbs: int = 512
    seq: int = 8192
    schedules: tuple[str, ...] = DEFAULT_SCHEDULES
    headroom: float = 0.0  # percent of HBM kept free beyond the GPU's reserve (as `ppviz search`)
    top: int = 20
    tp_modes: tuple[str, ...] = ("1d",)  # tensor parallelism searched: 1D (Megatron) and/or 2D (SUMMA, seed 003)
    matmul_efficiency: float | None = None  # EFFICIENCIES: a calibration profile's, else the preset's
    hbm_efficiency: float | None = None
    nvlink_efficiency: float | None = None
    network_efficiency: float | None = None

    @property
    def efficiencies(self) -> dict[str, float]:
        """The efficiencies set (by a calibration profile), by their ``Gpu`` field names."""
        return {name: getattr(self, name) for name in EFFICIENCIES if getattr(self, name) is not None}

    def gpu_spec(self) -> specs.Gpu:
        """The GPU searched: the preset with the efficiencies set."""
        return specs.gpu(self.gpu, **self.efficiencies)


class Parsed(NamedTuple):
    state: SearchState
    notes: list[str]
    given: bool  # the link carries search inputs (so it reruns the search)


def encode(state: SearchState) -> dict[str, str]:
    pairs = {"model": state.model, "gpu": state.gpu}
    if state.schedules:
        pairs["schedules"] = ",".join(state.schedules)
    pairs["tp_mode"] = ",".join(state.tp_modes)
    pairs |= {name: validation.num(getattr(state, name)) for name in FIELDS}
    pairs |= {name: repr(value) for name, value in state.efficiencies.items()}  # exact: the CLI reads them back
    return pairs


def key_of(state: SearchState) -> str:
    """One string per search (what a run is remembered by)."""
    return "&".join(f"{k}={v}" for k, v in encode(state).items())


def parse(hash_: object) -> Parsed:
    query = read_hash(hash_)
    raw = dict(query)
    for key in ("schedules", "tp_mode"):
        if key in raw:
            raw[key] = [n for n in raw[key].split(",") if n]
    state, notes = bounded(raw)
    return Parsed(state, notes, bool(query))


def bounded(raw: dict) -> tuple[SearchState, list[str]]:
    """A state from raw values (text from a link, anything from a request), every field checked."""
    base = SearchState()
    notes: list[str] = []
    values: dict = read_presets(raw, base, notes)
    if "schedules" in raw and raw["schedules"] is not None:
        sent = raw["schedules"] if isinstance(raw["schedules"], (list, tuple)) else [raw["schedules"]]
        known = list(dict.fromkeys(n for n in sent if isinstance(n, str) and n in REGISTRY))
        named = [n for n in sent if n != ""]
        if len(known) != len(named):
            notes.append("unknown schedules left out of the search" + ("" if known else "; searching every schedule"))
        values["schedules"] = tuple(known)  # none: every schedule
    if raw.get("tp_mode") is not None:
        sent = raw["tp_mode"] if isinstance(raw["tp_mode"], (list, tuple)) else [raw["tp_mode"]]
        modes = tuple(m for m in TP_MODES if m in sent)
        if len(modes) != len(sent):
            notes.append(f"tensor parallelism takes {' and '.join(TP_MODES)}; left out the rest")
        if modes:
            values["tp_modes"] = modes
        else:
            notes.append(f"no tensor-parallel mode to search; using {', '.join(base.tp_modes)}")
    for name, f in {**FIELDS, **EFFICIENCIES}.items():
        if raw.get(name) is None or raw.get(name) == "":
            continue
        v = validation.in_range(name, validation.number(raw[name]), f.low, f.high, f.integer, notes)
        if v is not None:
            values[name] = v
    return replace(base, **values), notes


def with_calibration(values: dict, stored: object, notes: list[str]) -> dict:
    """The controls' values with the stored profile's efficiencies (``{"gpu", "efficiencies"}``), when it
    was fitted on the GPU chosen; for another GPU it is left out, with a note (as the CLI refuses it)."""
    if not isinstance(stored, dict) or not isinstance(stored.get("efficiencies"), dict):
        return values
    fitted_on, chosen = str(stored.get("gpu"))[:40], str(values.get("gpu"))[:40]
    if fitted_on != chosen:
        notes.append(f"the calibration profile was fitted on {fitted_on}, not {chosen}: searching with {chosen}'s own "
                     f"efficiencies; choose {fitted_on} to use the profile")  # fmt: skip
        return values
    return {**values, **{k: v for k, v in stored["efficiencies"].items() if k in EFFICIENCIES}}


def calibration_line(state: SearchState) -> str | None:
    """What the search's efficiencies are, when a profile or a link set them."""
    if not state.efficiencies:
        return None
    effs = ", ".join(f"{k.removesuffix('_efficiency')} {v:.3g}" for k, v in state.efficiencies.items())
    return f"calibrated {state.gpu} efficiencies (from the link): {effs}"


def check_groups(state: SearchState, groups: int | None) -> None:
    """Refuse a search of more than MAX_GROUPS layout groups (None: more than MAX_SHAPES shapes to list),
    saying what to change."""
    if groups is not None and groups <= MAX_GROUPS:
        return
    size = f"{groups:,} layout groups" if groups is not None else f"more than {MAX_SHAPES:,} layout shapes"
    raise ValueError(
        f"the search spans {size} (tp · cp · pp · dp · mbs · recompute · placement); the page searches at most "
        f"{MAX_GROUPS:,} groups: lower GPUs, the global batch or the sequence length, search 1D tensor parallelism "
        f"only, or use the CLI: {cli_command(state)}"
    )


def cli_command(state: SearchState) -> str:
    """The ``ppviz search`` command of the page's inputs (what to run past the page's bounds)."""
    return commands.command(
        "search",
        model=state.model,
        gpu=state.gpu,
        gpus=state.gpus,
        gbs=state.gbs,
        seq=state.seq,
        schedules=",".join(state.schedules) or None,
        headroom=state.headroom / 100,
        tp_mode=",".join(state.tp_modes),
        top=state.top,
        **{name: repr(value) for name, value in state.efficiencies.items()},  # exact (``:g`` would round)
    )


def model_link(state: SearchState, row: dict) -> ModelState:
    """The model & cluster view of one ranked layout (a row of the search's answer)."""
    seq_default = specs.model(state.model).seq
    split = row.get("layer_split")
    return ModelState(
        mode="single",
        schedule=row["schedule"],
        model=state.model,
        gpu=state.gpu,
        model_over={} if state.seq == seq_default else {"seq": state.seq},
        gpu_over=state.efficiencies,  # the model page's efficiency fields are the Gpu's, in its own unit
        tp=row["tp"],
        pp=row["pp"],
        dp=row["dp"],
        cp=row.get("cp", 1),
        ep=row.get("ep", 1),
        vpp=row.get("vpp", 1),
        mbs=row["mbs"],
        gbs=row["gbs"],
        sp=bool(row["sequence_parallel"]),
        tpo=row.get("tp_comm_overlap") is True,
        recompute=row["recompute"],
        zero=row["zero"],
        split=tuple(split) if split else None,
        tp_mode=row.get("tp_mode", "1d"),
        tp2d=tuple(row["tp2d"]) if row.get("tp2d") else None,
        summa_blocks=row.get("summa_blocks") or 0,
        nvlink_dp_pp=tuple(row["nvlink_dp_pp"]) if row.get("nvlink_dp_pp") else None,
    )
