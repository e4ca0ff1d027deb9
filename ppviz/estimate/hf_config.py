"""A Model from a Hugging Face ``config.json``: the user gives the file, nothing is downloaded.

Field names are those of the ``transformers`` configuration classes (``LlamaConfig``,
``MistralConfig``, ``MixtralConfig``, ``Qwen2Config``, ``Qwen2MoeConfig``, ``Qwen3Config``,
``Qwen3MoeConfig``, ``DeepseekV3Config``, ``GPT2Config``). A field the family needs and the file
lacks, or a value ppviz cannot model, is an error that names the field.

The sequence length is the training one, which a config does not hold: ``max_position_embeddings``
is the longest context the model supports, so give ``seq`` for the run you plan (the default takes
the config's value).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

from ..errors import InputError
from .specs import Model

LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3")
FAMILIES = LLAMA_LIKE + MOE + ("gpt2",)
MAX_CONFIG_BYTES = 1 << 20  # a config.json is a few kB; refuse anything that is clearly not one


def read(path: str | Path) -> dict:
    """The parsed file, or an InputError saying why it is not a config.json."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise InputError(f"{p} is larger than 1 MiB: not a config.json", field="hf_config")
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read {p} as a config.json: {e}", field="hf_config") from None
    if not isinstance(data, dict):
        raise InputError(f"{p} holds JSON but not an object of fields: not a config.json", field="hf_config")
    return data


def model_from_config(config: Mapping | str | Path, *, seq: int | None = None, name: str | None = None) -> Model:
    """The Model a config describes (a mapping, or the path of a config.json)."""
    cfg = read(config) if isinstance(config, (str, Path)) else dict(config)
    family = cfg.get("model_type")
    if family not in FAMILIES:
        raise InputError(
            f"config.json model_type {family!r} is not one ppviz reads; it reads {', '.join(FAMILIES)} "
            "(or give the model's fields with --layers, --hidden, ...)",
            field="model_type",
        )
    fields = _gpt2(cfg) if family == "gpt2" else {**_decoder(cfg), **_moe(cfg, family)}
    fields["seq"] = seq if seq is not None else fields["seq"]
    return Model(name=name or str(cfg.get("_name_or_path") or family), **fields)


def _need(cfg: Mapping, key: str, what: str) -> int:
    """A whole-number field the family needs, or an error naming it."""
    if key not in cfg or cfg[key] is None:
        raise InputError(f"config.json has no {key!r} ({what})", field=key)
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InputError(f"config.json {key!r} must be a whole number ≥ 0 (got {v!r})", field=key)
    return v


def _decoder(cfg: Mapping) -> dict:
    """Llama-style fields: RMSNorm, no biases, rotary positions, SwiGLU when the activation is SiLU."""
    heads = _need(cfg, "num_attention_heads", "attention heads")
    act = cfg.get("hidden_act", "silu")
    if act not in ("silu", "swiglu", "gelu", "gelu_new", "relu"):
        raise InputError(f"config.json hidden_act {act!r} is not one ppviz models", field="hidden_act")
    head_dim = cfg.get("head_dim") or cfg.get("v_head_dim") or 0
    return {
        "layers": _need(cfg, "num_hidden_layers", "the number of layers"),
        "hidden": _need(cfg, "hidden_size", "the hidden width"),
        "heads": heads,
        "kv_heads": cfg.get("num_key_value_heads") or heads,
        "ffn": _need(cfg, "intermediate_size", "the FFN width"),
        "vocab": _need(cfg, "vocab_size", "the vocabulary"),
        "seq": _need(cfg, "max_position_embeddings", "the longest context; or give seq"),
        "head_dim": head_dim,
        "gated_mlp": act in ("silu", "swiglu"),
        "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
    }


def _moe(cfg: Mapping, family: str) -> dict:
    """Routed experts, shared experts (whole experts of the routed width) and leading dense layers."""
    if family == "mixtral":
        width = _need(cfg, "intermediate_size", "the width of one expert")
        return {"experts": _need(cfg, "num_local_experts", "experts"), "top_k": _top_k(cfg), "expert_ffn": width}
    if family == "deepseek_v3":
        if cfg.get("moe_layer_freq", 1) != 1:
            raise InputError("config.json moe_layer_freq other than 1 is not modelled", field="moe_layer_freq")
        return {
            "experts": _need(cfg, "n_routed_experts", "routed experts"),
            "top_k": _top_k(cfg),
            "expert_ffn": _need(cfg, "moe_intermediate_size", "the width of one expert"),
            "shared_experts": cfg.get("n_shared_experts") or 0,
            "dense_layers": cfg.get("first_k_dense_replace") or 0,
        }
    if family in ("qwen2_moe", "qwen3_moe"):
        width = _need(cfg, "moe_intermediate_size", "the width of one expert")
        if cfg.get("decoder_sparse_step", 1) != 1:
            raise InputError(
                "config.json decoder_sparse_step other than 1 is not modelled", field="decoder_sparse_step"
            )
        dense = sorted(cfg.get("mlp_only_layers") or [])
        if dense != list(range(len(dense))):
            raise InputError(
                f"config.json mlp_only_layers {dense} are not the leading layers: ppviz models dense layers first",
                field="mlp_only_layers",
            )
        shared = (cfg.get("shared_expert_intermediate_size") or 0) / width
        if shared != math.floor(shared):
            raise InputError(
                "config.json shared_expert_intermediate_size is not a whole number of experts "
                f"({cfg['shared_expert_intermediate_size']} / {width}): "
                "ppviz models shared experts of the routed width",
                field="shared_expert_intermediate_size",
            )
        return {
            "experts": _need(cfg, "num_experts", "routed experts"),
            "top_k": _top_k(cfg),
            "expert_ffn": width,
            "shared_experts": int(shared),
            "dense_layers": len(dense),
        }
    return {}


def _top_k(cfg: Mapping) -> int:
    return _need(cfg, "num_experts_per_tok", "experts per token")


def _gpt2(cfg: Mapping) -> dict:
    """GPT-2: LayerNorm and biases, learned positions, GELU MLP of n_inner (4h by default), tied embeddings."""
    hidden = _need(cfg, "n_embd", "the hidden width")
    heads = _need(cfg, "n_head", "attention heads")
    return {
        "layers": _need(cfg, "n_layer", "the number of layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": heads,
        "ffn": cfg.get("n_inner") or 4 * hidden,
        "vocab": _need(cfg, "vocab_size", "the vocabulary"),
        "seq": _need(cfg, "n_positions", "the longest context; or give seq"),
        "bias": True,
        "dropout": bool(cfg.get("resid_pdrop", 0.1)),
        "learned_positions": True,
        "tied_embeddings": bool(cfg.get("tie_word_embeddings", True)),
    }
