"""The inputs of a real-units estimate: a model, a GPU and a parallel layout (frozen, hashable).

Units are in the field names (FLOP/s, bytes, bytes/s, seconds). Presets are data files in
``presets/`` (TOML), loaded once; every field of a preset can be overridden by keyword.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..errors import InputError
from ..units import GIB
from . import defaults

RECOMPUTE = ("none", "selective", "full")
TP_MODES = ("1d", "2d")
PRECISIONS = ("bf16", "fp16", "fp8")  # fp16 runs at the 16-bit tensor rate, bf16_flops (V100 has no BF16)


class SpecError(InputError):
    """An input the estimate cannot use; the message says what to change."""


def _flag(default, flag: str | None = None, unit: float = 1.0, help: str | None = None):
    """A field whose command-line override differs from the plain ``--field-name`` in its
    spelling, its unit (``--hbm-gib 40`` is hbm_bytes 40·2³⁰) or its help."""
    return dataclasses.field(default=default, metadata={"flag": flag, "unit": unit, "help": help})


@dataclass(frozen=True)
class OverrideFlag:
    """The command-line flag that overrides one field of a Model or a Gpu (`ppviz estimate`,
    `render --model`, `search`): ``--name VALUE`` sets the field to VALUE × unit; a bool is
    ``--name`` / ``--no-name``."""

    name: str  # without the dashes: "peak-tflops"
    field: str  # "bf16_flops"
    type: type  # int, float or bool
    unit: float
    help: str


_TYPES = {"int": int, "float": float, "bool": bool}


def override_flags(cls: type) -> tuple[OverrideFlag, ...]:
    """The override flag of every field of ``cls`` (Model or Gpu) but its name: numbers in field
    order, then the switches."""
    out = []
    for f in dataclasses.fields(cls):
        if f.name == "name":
            continue
        meta = f.metadata
        name = meta.get("flag") or f.name.replace("_", "-")
        text = meta.get("help") or f"override the {cls.__name__.lower()}'s {f.name}"
        out.append(OverrideFlag(name, f.name, _TYPES[f.type], meta.get("unit", 1.0), text))
    return tuple(sorted(out, key=lambda o: o.type is bool))


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer. ``head_dim`` 0 means hidden / heads; ``experts`` 0 means dense.

    MoE: every layer after the first ``dense_layers`` routes each token to ``top_k`` of ``experts``
    experts of width ``expert_ffn``, plus ``shared_experts`` always-on experts of that width.
    """

    name: str = "custom"
    layers: int = 1
    hidden: int = 1
    heads: int = 1
    kv_heads: int = 1
    ffn: int = 4
    vocab: int = 1
    seq: int = 1
    head_dim: int = 0
    gated_mlp: bool = False  # SwiGLU: three FFN matrices instead of two
    tied_embeddings: bool = False
    bias: bool = False  # linear biases and LayerNorm (GPT); False: no biases, RMSNorm (Llama)
    dropout: bool = False  # dropout layers (and their 1-byte masks) as in Korthikanti et al.
    flash_attention: bool = True  # no s² activation, attention computed in one fused kernel
    learned_positions: bool = False  # a learned s×h position table on the first stage (GPT)
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    dense_layers: int = 0

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq"):
            _check_int(f"model {name}", getattr(self, name), 1, field=name)
        for name in ("head_dim", "experts", "top_k", "expert_ffn", "shared_experts", "dense_layers"):
            _check_int(f"model {name}", getattr(self, name), 0, field=name)
        for name in ("gated_mlp", "tied_embeddings", "bias", "dropout", "flash_attention", "learned_positions"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(f"model {name} must be true or false (got {getattr(self, name)!r})", field=name)
        if self.heads % self.kv_heads:
            raise SpecError(f"kv_heads {self.kv_heads} must divide heads {self.heads}", field="kv_heads")
        if not self.head_dim and self.hidden % self.heads:
            raise SpecError(f"heads {self.heads} must divide hidden {self.hidden} (or give head_dim)", field="heads")
        if self.experts:
            if not 1 <= self.top_k <= self.experts:
                raise SpecError(
                    f"an MoE model needs 1 ≤ top_k ≤ experts (got top_k {self.top_k}, {self.experts})", field="top_k"
                )
            if not self.expert_ffn:
                raise SpecError("an MoE model needs expert_ffn, the width of one expert", field="expert_ffn")
            if self.dense_layers >= self.layers:
                raise SpecError(
                    f"dense_layers {self.dense_layers} leaves no MoE layer of {self.layers}", field="dense_layers"
                )
        elif self.top_k or self.shared_experts:
            raise SpecError("top_k and shared_experts need experts > 0", field="experts")

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def is_moe_layer(self, i: int) -> bool:
        return self.moe and i >= self.dense_layers


@dataclass(frozen=True)
class Gpu:
    """One accelerator and its two network tiers.

    The efficiencies and the per-kernel overhead are never tuned per case. The default matmul
    efficiency was fitted on A100-80GB to Korthikanti et al. 2022 Tables 4 and 5 together; the
    H100 preset (and those after it) carry their own, fitted on published H100 runs
    (``calibration.H100_FIT``); the others are round figures near NERSC's and Calculon's.
    """

    name: str = "custom"
    bf16_flops: float = _flag(1e12, "peak-tflops", 1e12, "dense BF16 peak, TFLOP/s")  # tensor cores
    fp8_flops: float = _flag(0.0, "fp8-tflops", 1e12, "dense FP8 peak, TFLOP/s")  # 0: no FP8 tensor cores
    vector_flops: float = _flag(1e12, "vector-tflops", 1e12, "non-tensor-core peak, TFLOP/s")  # elementwise ops
    hbm_bytes: float = _flag(80 * GIB, "hbm-gib", GIB, "HBM capacity, GiB (2^30 bytes), as nvidia-smi counts it")
    hbm_bytes_per_s: float = _flag(2e12, "hbm-gbps", 1e9, "HBM bandwidth, GB/s")
    nvlink_bytes_per_s: float = _flag(300e9, "nvlink-gbps", 1e9, "NVLink bandwidth per direction, GB/s")
    network_bytes_per_s: float = _flag(25e9, "network-gbps", 1e9, "network bandwidth per GPU, GB/s")  # per direction
    nvlink_latency_s: float = _flag(2e-6, "nvlink-latency-us", 1e-6, "NVLink latency, µs")  # per ring step / message
    network_latency_s: float = _flag(5e-6, "network-latency-us", 1e-6, "network latency, µs")
    matmul_efficiency: float = _flag(0.75, help="fraction of the peak a GEMM reaches")
    hbm_efficiency: float = _flag(0.85, help="fraction of the HBM bandwidth reached")
    nvlink_efficiency: float = _flag(0.72, help="fraction of the NVLink bandwidth reached")
    network_efficiency: float = _flag(0.8, help="fraction of the network bandwidth reached")
    kernel_overhead_s: float = _flag(4e-6, "kernel-overhead-us", 1e-6, "launch overhead per kernel, µs")
    nvlink_domain: int = _flag(8, help="GPUs per NVLink domain")  # 8; 72 for NVL72
    # HBM a training process cannot use (CUDA context, NCCL buffers, allocator fragmentation): a layout
    # fits when every device's peak ≤ hbm_bytes − reserve_bytes
    reserve_bytes: float = _flag(defaults.RESERVE_BYTES, "reserve-gib", GIB,
                                 "HBM a run cannot use (CUDA context, NCCL buffers, fragmentation), GiB "
                                 f"(default {defaults.RESERVE_BYTES / GIB:g})")  # fmt: skip

    def __post_init__(self) -> None:
        for name in ("bf16_flops", "vector_flops", "hbm_bytes", "hbm_bytes_per_s", "nvlink_bytes_per_s",
                     "network_bytes_per_s"):  # fmt: skip
            _check_float(f"gpu {name}", getattr(self, name), positive=True, field=name)
        for name in ("fp8_flops", "nvlink_latency_s", "network_latency_s", "kernel_overhead_s", "reserve_bytes"):
            _check_float(f"gpu {name}", getattr(self, name), positive=False, field=name)
        for name in ("matmul_efficiency", "hbm_efficiency", "nvlink_efficiency", "network_efficiency"):
            v = getattr(self, name)
            _check_float(f"gpu {name}", v, positive=True, field=name)
            if v > 1:
                raise SpecError(
                    f"gpu {name} is a fraction of the peak: give a number in (0, 1] (got {v:g})", field=name
                )
        _check_int("gpu nvlink_domain", self.nvlink_domain, 1, field="nvlink_domain")
        if self.reserve_bytes >= self.hbm_bytes:
            raise SpecError(
                f"the reserve ({self.reserve_bytes / GIB:,.2f} GiB) leaves nothing of the HBM "
                f"({self.hbm_bytes / GIB:,.2f} GiB): lower the reserve",
                field="reserve_bytes",
            )

    @property
    def usable_bytes(self) -> float:
        """What a training process can hold: the HBM less the reserve."""
        return self.hbm_bytes - self.reserve_bytes


@dataclass(frozen=True)
class Layout:
    """How one model is spread over GPUs, and what each training step keeps.

    The pipeline runs ``schedule`` on ``pp`` devices with m = gbs / (dp·mbs) microbatches; ``vpp``
    is the chunks per device of schedules that take it (interleaved). ``layer_split`` gives the
    layers of every stage explicitly; ``edge_fewer`` k takes k layers off the first and the last
    stage (Llama 3 405B: 1) and spreads the rest evenly.

    The field defaults are the bare record (nothing switched on); ``default_layout`` fills in the
    defaults every surface uses (``defaults``: selective recompute, SP when tp > 1, ZeRO-1).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    mbs: int = 1
    gbs: int | None = None  # global batch in sequences; None: one microbatch per DP rank
    sequence_parallel: bool = False
    recompute: str = "none"
    zero: int = 0  # 0 none; 1 distributed optimizer (optimizer state sharded); 2 + gradients; 3 + weights
    precision: str = "bf16"
    schedule: str = "1f1b"
    schedule_params: tuple[tuple[str, object], ...] = ()
    layer_split: tuple[int, ...] | None = None
    edge_fewer: int = 0
    dp_overlap: bool = True  # overlap the gradient reduction with the last backward (Megatron's default)
    b_frees: float = 0.0  # fraction of a stage's activation that B frees (W frees the rest)
    pair_overlap: bool = False  # overlapped F&B pairs (DualPipe) hide each op's MoE all-to-all
    # TP collectives overlapped with the GEMMs (Megatron --tp-comm-overlap, Transformer Engine userbuffers);
    # needs sequence parallel, as Megatron asserts
    tp_comm_overlap: bool = False
    tp_mode: str = "1d"  # "2d": SUMMA over hidden × sequence (NERSC's performance model, seed 003)
    tp2d: tuple[int, int] | None = None  # 2D grid (hidden ways, sequence ways); their product is tp
    summa_blocks: int = 0  # SUMMA steps (panels) per matmul; 0: the least, lcm of the two grid sides
    # NVLink placement (NERSC's, seed 003): (dp ranks, pp ranks) sharing one NVLink domain beside the whole
    # tp·cp group; None: Megatron's rank order (tp fastest, then cp, dp, pp), as far as the domain reaches
    nvlink_dp_pp: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs"):
            _check_int(name, getattr(self, name), 1, field=name)
        if self.gbs is not None:
            _check_int("gbs", self.gbs, 1, field="gbs")
        if self.recompute not in RECOMPUTE:
            raise SpecError(
                f"recompute must be one of {', '.join(RECOMPUTE)} (got {self.recompute!r})", field="recompute"
            )
        if self.precision not in PRECISIONS:
            raise SpecError(
                f"precision must be one of {', '.join(PRECISIONS)} (got {self.precision!r})", field="precision"
            )
        if isinstance(self.zero, bool) or self.zero not in (0, 1, 2, 3):
            raise SpecError(f"zero must be 0, 1, 2 or 3 (got {self.zero!r})", field="zero")
        for name in ("sequence_parallel", "dp_overlap", "pair_overlap", "tp_comm_overlap"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(f"{name} must be true or false (got {getattr(self, name)!r})", field=name)
        _check_int("edge_fewer", self.edge_fewer, 0, field="edge_fewer")
        if isinstance(self.schedule_params, dict):
            object.__setattr__(self, "schedule_params", tuple(sorted(self.schedule_params.items())))
        if self.layer_split is not None:
            split = tuple(self.layer_split)
            for n in split:
                _check_int("every entry of layer_split", n, 0, field="layer_split")
            object.__setattr__(self, "layer_split", split)
            if self.edge_fewer:
                raise SpecError("give either layer_split or edge_fewer, not both", field="layer_split")
        if self.sequence_parallel and self.tp == 1:
            raise SpecError(
                "sequence parallel splits the sequence over the tp GPUs: it needs tp > 1", field="sequence_parallel"
            )
        if self.tp_comm_overlap and not self.sequence_parallel:
            raise SpecError(
                "tp_comm_overlap overlaps the sequence-parallel all-gathers and reduce-scatters with the GEMMs "
                "(Megatron asserts sequence parallel with --tp-comm-overlap): add sequence_parallel (tp > 1), "
                "or drop it",
                field="tp_comm_overlap",
            )
        if not 0 <= self.b_frees <= 1:
            raise SpecError(f"b_frees must be between 0 and 1 (got {self.b_frees})", field="b_frees")
        self._check_tp_mode()
        self._check_nvlink()

    def _check_nvlink(self) -> None:
        if self.nvlink_dp_pp is None:
            return
        pair = tuple(self.nvlink_dp_pp) if isinstance(self.nvlink_dp_pp, (tuple, list)) else (self.nvlink_dp_pp,)
        if len(pair) != 2:
            raise SpecError(
                f"nvlink_dp_pp is (dp ranks, pp ranks) in one NVLink domain, e.g. 2,4 (got {pair})",
                field="nvlink_dp_pp",
            )
        for n in pair:
            _check_int("each entry of nvlink_dp_pp", n, 1, field="nvlink_dp_pp")
        object.__setattr__(self, "nvlink_dp_pp", pair)
        a, b = pair
        if self.dp % a or self.pp % b:
            raise SpecError(
                f"nvlink_dp_pp {a},{b}: the dp ranks must divide dp {self.dp} and the pp ranks pp {self.pp}",
                field="nvlink_dp_pp",
            )
        if self.ep > 1 and a % self.ep:
            raise SpecError(f"nvlink_dp_pp {a},{b}: keep each expert-parallel group (ep {self.ep}) in the domain: "
                            f"make the dp ranks a multiple of {self.ep}", field="nvlink_dp_pp")  # fmt: skip

    def _check_tp_mode(self) -> None:
        if self.tp_mode not in TP_MODES:
            raise SpecError(f"tp_mode must be one of {', '.join(TP_MODES)} (got {self.tp_mode!r})", field="tp_mode")
        _check_int("summa_blocks", self.summa_blocks, 0, field="summa_blocks")
        if self.tp_mode == "1d":
            if self.tp2d is not None or self.summa_blocks:
                raise SpecError(
                    "tp2d and summa_blocks are for tp_mode 2d: add tp_mode 2d, or drop them", field="tp_mode"
                )
            return
        if self.tp2d is None or len(tuple(self.tp2d)) != 2:
            raise SpecError(
                f"tp_mode 2d needs tp2d = (hidden ways, sequence ways) whose product is tp {self.tp}", field="tp2d"
            )
        grid = tuple(self.tp2d)
        for n in grid:
            _check_int("each side of tp2d", n, 1, field="tp2d")
        object.__setattr__(self, "tp2d", grid)
        if grid[0] * grid[1] != self.tp:
            raise SpecError(
                f"tp2d {grid[0]},{grid[1]} multiplies to {grid[0] * grid[1]}, not tp {self.tp}", field="tp2d"
            )
        if self.sequence_parallel:
            raise SpecError(
                "2D tensor parallelism already splits the sequence over its second side: drop sequence_parallel",
                field="sequence_parallel",
            )
        if self.cp > 1:
            raise SpecError("2D tensor parallelism splits the sequence itself: use cp 1 with tp_mode 2d", field="cp")
        if self.summa_blocks and (self.summa_blocks % grid[0] or self.summa_blocks % grid[1]):
            raise SpecError(
                f"summa_blocks {self.summa_blocks} must be a multiple of both sides of tp2d {grid[0]},{grid[1]} "
                f"(each panel inside one GPU's block): use {math.lcm(*grid)} or a multiple of it",
                field="summa_blocks",
            )

    def replace(self, **changes) -> Layout:
        """A copy with ``changes``, checked as every Layout is: ``dataclasses.replace`` at half its
        cost (the search derives a layout per schedule it bounds, tens of thousands)."""
        return Layout(**{**self.__dict__, **changes})

    @property
    def blocks(self) -> int:
        """SUMMA steps per matmul under tp_mode 2d (summa_blocks, or the lcm of the grid sides)."""
        return self.summa_blocks or (math.lcm(*self.tp2d) if self.tp2d else 0)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def microbatches(self) -> int:
        """m = gbs / (dp·mbs); a ValueError says what to change when it does not divide."""
        if self.gbs is None:
            return 1
        per = self.dp * self.mbs
        if self.gbs % per:
            lo, hi = self.gbs // per * per, (self.gbs // per + 1) * per
            raise SpecError(
                f"global batch {self.gbs} is not a multiple of dp·mbs = {self.dp}·{self.mbs} = {per}: "
                f"use gbs {lo or hi} or {hi}, or change dp or mbs",
                field="gbs",
            )
        return self.gbs // per

    @property
    def global_batch(self) -> int:
        return self.microbatches * self.dp * self.mbs


def default_layout(**given) -> Layout:
    """A Layout with ``given`` fields and the defaults of every surface for the rest (``defaults``):
    recompute, ZeRO and sequence parallelism (on when tp > 1 under 1D TP). A None counts as not given."""
    given = {k: v for k, v in given.items() if v is not None}
    given.setdefault("recompute", defaults.RECOMPUTE)
    given.setdefault("zero", defaults.ZERO)
    given.setdefault("schedule", defaults.SCHEDULE)
    sp = defaults.sequence_parallel(given.get("tp", 1), given.get("tp_mode", "1d"))
    given.setdefault("sequence_parallel", sp)
    return Layout(**given)


# --- presets ---------------------------------------------------------------------------------


@cache
def _table(kind: str) -> dict[str, dict]:
    text = resources.files(__package__).joinpath("presets", f"{kind}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def model_names() -> list[str]:
    return list(_table("models"))


def gpu_names() -> list[str]:
    return list(_table("gpus"))


def model(name: str, **overrides) -> Model:
    """The named model preset with any field overridden (``model("llama3-8b", seq=4096)``)."""
    return _load(Model, "models", name, overrides)


def gpu(name: str, **overrides) -> Gpu:
    """The named GPU preset with any field overridden (``gpu("b200", nvlink_domain=72)``)."""
    return _load(Gpu, "gpus", name, overrides)


def override(spec, **overrides):
    """A copy of a Model or Gpu with some fields replaced (unknown fields are refused)."""
    _check_fields(type(spec), overrides)
    return dataclasses.replace(spec, **overrides)


def _load(cls, kind: str, name: str, overrides: dict):
    table = _table(kind)
    if name not in table:
        what = "model" if kind == "models" else "GPU"
        raise SpecError(f"unknown {what} preset {name!r}; choose one of: {', '.join(table)}", field=what.lower())
    _check_fields(cls, overrides)
    return cls(name=name, **{**table[name], **{k: v for k, v in overrides.items() if v is not None}})


def _check_fields(cls, overrides: dict) -> None:
    known = {f.name for f in dataclasses.fields(cls)} - {"name"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise SpecError(
            f"{cls.__name__} has no field {', '.join(unknown)}; fields: {', '.join(sorted(known))}", field=unknown[0]
        )


def as_dict(spec) -> dict:
    return dataclasses.asdict(spec)


# --- checks ----------------------------------------------------------------------------------


def _check_int(name: str, v: object, low: int, *, field: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SpecError(f"{name} must be a whole number (got {v!r})", field=field)
    if v < low:
        raise SpecError(f"{name} must be ≥ {low} (got {v})", field=field)


def _check_float(name: str, v: object, positive: bool, *, field: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SpecError(f"{name} must be a finite number (got {v!r})", field=field)
    if v < 0 or (positive and v == 0):
        raise SpecError(f"{name} must be {'> 0' if positive else '≥ 0'} (got {v:g})", field=field)


__all__ = [
    "Gpu",
    "Layout",
    "Model",
    "OverrideFlag",
    "SpecError",
    "default_layout",
    "gpu",
    "gpu_names",
    "model",
    "model_names",
    "override",
    "override_flags",
]
