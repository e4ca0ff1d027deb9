"""Launch settings for a planned layout: Megatron-LM's arguments and torchtitan's TOML sections.

A layout that a framework cannot express gets a note (written as a ``#`` comment above the text),
never a flag that would run something else silently. Flag names are Megatron-LM's
``megatron/training/arguments.py`` at NVIDIA/Megatron-LM dd546099fa37cf52e9bdc2f4fe707c60b26eff31
(Dec 2025, the last revision that lists every flag by hand; later ones build the same names from
the config dataclasses). Keys are torchtitan's ``JobConfig`` (``torchtitan/config/job_config.py``)
at pytorch/torchtitan e347b1e5e6b6941d789d16d340145294d82dc71e (Feb 2026, the last revision read
from TOML). Schedule names are those of ``torch.distributed.pipelining``'s ``get_schedule_class``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .estimate.iteration import schedule_for, split_layers
from .estimate.specs import Layout, Model, SpecError

FRAMEWORKS = ("megatron", "torchtitan")

# ppviz schedule -> torch.distributed.pipelining's name (torchtitan's pipeline_parallel_schedule)
TORCH_SCHEDULES = {
    "gpipe": "GPipe",
    "1f1b": "1F1B",
    "interleaved-1f1b": "Interleaved1F1B",
    "looped-bfs": "LoopedBFS",
    "interleaved-zb": "InterleavedZeroBubble",
    "zb-v": "ZBVZeroBubble",
    "dualpipe-v": "DualPipeV",
}
# ppviz schedules Megatron-LM runs: 1F1B, interleaved (virtual stages), and both with MoE all-to-all overlap
MEGATRON_SCHEDULES = ("1f1b", "interleaved-1f1b", "1f1b-overlap", "interleaved-1f1b-overlap")


@dataclass(frozen=True)
class Launch:
    """One framework's launch settings: its text (notes as ``#`` lines first) and the parsed form."""

    framework: str
    text: str
    notes: tuple[str, ...]
    settings: object  # Megatron: the argument list; torchtitan: {section: {key: value}}

    def to_dict(self) -> dict:
        """The JSON ``launch`` object."""
        key = "args" if self.framework == "megatron" else "config"
        return {"framework": self.framework, key: self.settings, "notes": list(self.notes), "text": self.text}


def launch(framework: str, model: Model, layout: Layout) -> Launch:
    """The launch settings of ``framework`` (one of FRAMEWORKS) for ``model`` on ``layout``."""
    if framework == "megatron":
        return megatron(model, layout)
    if framework == "torchtitan":
        return torchtitan(model, layout)
    raise ValueError(f"launch settings exist for {', '.join(FRAMEWORKS)} (got {framework!r})")


def _stages(model: Model, layout: Layout) -> tuple[int, ...]:
    """Layers of every pipeline stage in model order, as the estimate splits them."""
    return split_layers(model, layout, schedule_for(layout).stages)


def _common_notes(layout: Layout, name: str) -> list[str]:
    notes = []
    if layout.tp_mode == "2d":
        notes.append(f"{name} has no 2D (SUMMA) tensor parallelism: these settings run 1D tp {layout.tp}, "
                     "which the estimate did not time")  # fmt: skip
    if layout.nvlink_dp_pp is not None:
        notes.append(f"{name} places ranks in its own order; the estimate's NVLink placement dp,pp "
                     f"{layout.nvlink_dp_pp[0]},{layout.nvlink_dp_pp[1]} is not a setting of it")  # fmt: skip
    return notes


# --- Megatron-LM ------------------------------------------------------------------------------


def megatron(model: Model, layout: Layout) -> Launch:
    """Megatron-LM's ``pretrain_gpt.py`` arguments (parallelism, batch, memory and model shape)."""
    notes = _common_notes(layout, "Megatron-LM")
    args: list[tuple[str, object]] = [
        ("--tensor-model-parallel-size", layout.tp),
        ("--pipeline-model-parallel-size", layout.pp),
    ]
    if layout.schedule not in MEGATRON_SCHEDULES:
        notes.append(f"Megatron-LM has no {layout.schedule} schedule: these flags run its "
                     f"{'interleaved ' if layout.vpp > 1 else ''}1F1B, which the estimate did not time")  # fmt: skip
    if layout.vpp > 1:
        args.append(("--num-virtual-stages-per-pipeline-rank", layout.vpp))
    if layout.pp > 1:
        args += _megatron_split(model, layout, notes)
    if layout.cp > 1:
        args.append(("--context-parallel-size", layout.cp))
    if model.moe:
        args.append(("--expert-model-parallel-size", layout.ep))
        if layout.schedule.endswith("-overlap"):
            args.append(("--overlap-moe-expert-parallel-comm", None))
    elif layout.schedule.endswith("-overlap"):
        notes.append("the overlapped F&B pairs hide MoE all-to-alls: a dense model runs plain 1F1B")
    if layout.sequence_parallel:
        args.append(("--sequence-parallel", None))
    if layout.tp_comm_overlap:
        args.append(("--tp-comm-overlap", None))
    args += [("--micro-batch-size", layout.mbs), ("--global-batch-size", layout.global_batch)]
    args += _megatron_memory(layout)
    args += _megatron_model(model)
    return Launch("megatron", _megatron_text(args, notes), tuple(notes), _argv(args))


def _megatron_split(model: Model, layout: Layout, notes: list[str]) -> list[tuple[str, object]]:
    """Uneven stages as first/last counts (k fewer on the edges) or the full per-stage layout, split
    over the stages of the schedule Megatron-LM runs (pp·vpp)."""
    if layout.schedule not in MEGATRON_SCHEDULES:
        layout = layout.replace(schedule="interleaved-1f1b" if layout.vpp > 1 else "1f1b", schedule_params=())
    try:
        split = _stages(model, layout)
    except SpecError as e:
        notes.append(f"the layer split does not map onto Megatron-LM's {layout.pp * layout.vpp} stages ({e})")
        return []
    if len(set(split)) == 1:
        return []
    first, middle, last = split[0], split[1:-1], split[-1]
    if layout.vpp == 1 and len(set(middle)) <= 1:
        return [("--decoder-first-pipeline-num-layers", first), ("--decoder-last-pipeline-num-layers", last)]
    stages = [f"t*{n}" if n else "" for n in split]
    stages[0], stages[-1] = "E" + stages[0], stages[-1] + "L"
    return [("--pipeline-model-parallel-layout", "|".join(stages))]


def _megatron_memory(layout: Layout) -> list[tuple[str, object]]:
    args: list[tuple[str, object]] = []
    if layout.recompute == "selective":
        args.append(("--recompute-activations", None))
    elif layout.recompute == "full":
        args += [("--recompute-granularity", "full"), ("--recompute-method", "uniform"),
                 ("--recompute-num-layers", 1)]  # fmt: skip
    if layout.zero == 1:
        args.append(("--use-distributed-optimizer", None))
    elif layout.zero > 1:
        strategy = "optim_grads" if layout.zero == 2 else "optim_grads_params"
        args += [("--use-megatron-fsdp", None), ("--data-parallel-sharding-strategy", strategy)]
    if layout.dp > 1 and layout.dp_overlap:
        args.append(("--overlap-grad-reduce", None))
    args.append(("--bf16", None))
    if layout.precision == "fp8":
        args.append(("--fp8-format", "hybrid"))
    return args


def _megatron_model(model: Model) -> list[tuple[str, object]]:
    args: list[tuple[str, object]] = [
        ("--num-layers", model.layers),
        ("--hidden-size", model.hidden),
        ("--ffn-hidden-size", model.ffn),
        ("--num-attention-heads", model.heads),
    ]
    if model.kv_heads != model.heads:
        args += [("--group-query-attention", None), ("--num-query-groups", model.kv_heads)]
    if model.head_dim:
        args.append(("--kv-channels", model.head_dim))
    args += [("--seq-length", model.seq), ("--max-position-embeddings", model.seq), ("--vocab-size", model.vocab)]
    if model.gated_mlp:
        args.append(("--swiglu", None))
    if not model.tied_embeddings:
        args.append(("--untie-embeddings-and-output-weights", None))
    if not model.bias:
        args += [("--normalization", "RMSNorm"), ("--disable-bias-linear", None)]
    if not model.learned_positions:
        args.append(("--position-embedding-type", "rope"))
    if not model.dropout:
        args += [("--attention-dropout", 0), ("--hidden-dropout", 0)]
    args.append(("--attention-backend", "flash" if model.flash_attention else "unfused"))
    if model.moe:
        args += [("--num-experts", model.experts), ("--moe-router-topk", model.top_k),
                 ("--moe-ffn-hidden-size", model.expert_ffn)]  # fmt: skip
        if model.shared_experts:
            args.append(("--moe-shared-expert-intermediate-size", model.shared_experts * model.expert_ffn))
        if model.dense_layers:
            k = model.dense_layers
            args.append(("--moe-layer-freq", f"[0]*{k}+[1]*{model.layers - k}"))
    return args


def _argv(args: list[tuple[str, object]]) -> list[str]:
    out = []
    for flag, value in args:
        out += [flag] if value is None else [flag, str(value)]
    return out


def _megatron_text(args: list[tuple[str, object]], notes: list[str]) -> str:
    lines = [flag if value is None else f"{flag} {_shell(value)}" for flag, value in args]
    return "".join(f"# {n}\n" for n in notes) + " \\\n".join(lines) + "\n"


def _shell(value: object) -> str:
    text = str(value)
    return f"'{text}'" if any(c in text for c in "*[]|()+") else text


# --- torchtitan -------------------------------------------------------------------------------


def torchtitan(model: Model, layout: Layout) -> Launch:
    """torchtitan's ``[parallelism]``, ``[training]`` and ``[activation_checkpoint]`` sections."""
    notes = _common_notes(layout, "torchtitan")
    par: dict[str, object] = {}
    if layout.zero == 0:
        par |= {"data_parallel_replicate_degree": layout.dp, "data_parallel_shard_degree": 1}
    else:
        par |= {"data_parallel_replicate_degree": 1, "data_parallel_shard_degree": layout.dp}
        if layout.zero < 3:
            par["fsdp_reshard_after_forward"] = "never"  # weights stay gathered: ZeRO-2
        if layout.zero == 1:
            notes.append("torchtitan shards with FSDP: ZeRO-1 is written as ZeRO-2 (gradients sharded too), "
                         "which needs less memory than the estimate")  # fmt: skip
    par["tensor_parallel_degree"] = layout.tp
    if layout.tp > 1 and not layout.sequence_parallel:
        notes.append("torchtitan's tensor parallelism always splits the sequence (sequence parallel): "
                     "it needs less activation memory than this estimate without it")  # fmt: skip
    if layout.tp_comm_overlap:
        par["enable_async_tensor_parallel"] = True
    par["pipeline_parallel_degree"] = layout.pp
    if layout.pp > 1:
        torch_name = TORCH_SCHEDULES.get(layout.schedule)
        if torch_name is None:
            notes.append(f"torch.distributed.pipelining has no {layout.schedule}: set pipeline_parallel_schedule "
                         f"to one of {', '.join(TORCH_SCHEDULES.values())}")  # fmt: skip
        else:
            par["pipeline_parallel_schedule"] = torch_name
        par["pipeline_parallel_microbatch_size"] = layout.mbs
        par["module_fqns_per_model_part"] = _torchtitan_parts(_stages(model, layout))
    par["context_parallel_degree"] = layout.cp
    if model.moe:
        par["expert_parallel_degree"] = layout.ep
        if layout.ep > 1 and (par["data_parallel_shard_degree"] * layout.cp) % layout.ep:
            notes.append(f"torchtitan takes expert parallelism out of the sharded data-parallel ranks: ep "
                         f"{layout.ep} needs a data_parallel_shard_degree × cp it divides (ZeRO ≥ 1)")  # fmt: skip
    per_rank = layout.microbatches * layout.mbs
    training = {"local_batch_size": per_rank, "global_batch_size": layout.global_batch, "seq_len": model.seq}
    training["mixed_precision_param"] = "bfloat16"
    ac: dict[str, object] = {"mode": layout.recompute}
    if layout.recompute == "selective":
        ac["selective_ac_option"] = "op"
        notes.append("torchtitan's selective recompute is per operator (it keeps every other matmul output), "
                     "not Megatron's recompute of the attention core that the estimate times")  # fmt: skip
    config: dict[str, dict] = {"parallelism": par, "training": training, "activation_checkpoint": ac}
    if layout.tp_comm_overlap:
        config["compile"] = {"enable": True}  # async TP runs only under torch.compile
    if layout.precision == "fp8":
        config["model"] = {"converters": ["quantize.linear.float8"]}
    notes.append("[model] name and flavor pick torchtitan's own model definition: choose the one whose shape "
                 f"matches ({model.layers} layers, hidden {model.hidden}, {model.heads} heads)")  # fmt: skip
    return Launch("torchtitan", _toml(config, notes), tuple(notes), config)


def _torchtitan_parts(split: tuple[int, ...]) -> list[list[str]]:
    """Each stage's module names in model order (torchtitan's Llama-style names)."""
    parts, start = [], 0
    for n in split:
        parts.append([f"layers.{i}" for i in range(start, start + n)])
        start += n
    parts[0].insert(0, "tok_embeddings")
    parts[-1] += ["norm", "output"]
    return parts


def _toml(config: dict[str, dict], notes: list[str]) -> str:
    out = [f"# {n}" for n in notes]
    for section, values in config.items():
        out += ["", f"[{section}]"]
        out += [f"{key} = {_toml_value(v)}" for key, v in values.items()]
    return "\n".join(out).lstrip("\n") + "\n"


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")
