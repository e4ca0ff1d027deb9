"""Models from Hugging Face config.json files: the same shapes as the presets and the published sizes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ppviz.errors import InputError
from ppviz.estimate import Layout, model
from ppviz.estimate.hf_config import model_from_config
from ppviz.estimate.iteration import shape_of
from ppviz.estimate.layer import params

HF = Path(__file__).parent / "data" / "hf"


def _same(a, b) -> dict:
    return {f.name: (getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
            if f.name != "name" and getattr(a, f.name) != getattr(b, f.name)}  # fmt: skip


@pytest.mark.parametrize(
    ("file", "preset", "seq"),
    [
        ("llama3_8b_config.json", "llama3-8b", None),
        ("mixtral_8x7b_config.json", "mixtral-8x7b", None),
        ("deepseek_v3_config.json", "deepseek-v3", 4096),  # the preset's pre-training context
    ],
)
def test_a_config_gives_the_presets_shape(file, preset, seq):
    assert _same(model_from_config(HF / file, seq=seq), model(preset)) == {}


def _total_params(m) -> float:
    shape = shape_of(Layout())
    dense = min(m.dense_layers, m.layers) if m.moe else m.layers
    layers = dense * params(m, shape, moe=False) + (m.layers - dense) * params(m, shape, moe=True)
    embed = m.vocab * m.hidden * (1 if m.tied_embeddings else 2) + (m.seq * m.hidden if m.learned_positions else 0)
    return layers + embed + m.hidden * (2 if m.bias else 1)  # the final norm


@pytest.mark.parametrize(
    ("file", "published"),
    [  # total parameters from the model cards
        ("llama3_8b_config.json", 8.03e9),
        ("mistral_7b_config.json", 7.24e9),
        ("mixtral_8x7b_config.json", 46.7e9),
        ("qwen3_8b_config.json", 8.2e9),
        ("qwen2_moe_a2.7b_config.json", 14.3e9),
        ("qwen3_moe_30b_a3b_config.json", 30.5e9),
        ("gpt2_config.json", 124.4e6),
    ],
)
def test_a_configs_parameter_count_is_the_published_one(file, published):
    assert _total_params(model_from_config(HF / file)) == pytest.approx(published, rel=0.012)


def test_moe_fields_of_each_family():
    q2 = model_from_config(HF / "qwen2_moe_a2.7b_config.json")
    assert (q2.experts, q2.top_k, q2.expert_ffn, q2.shared_experts, q2.dense_layers) == (60, 4, 1408, 4, 0)
    q3 = model_from_config(HF / "qwen3_moe_30b_a3b_config.json")
    assert (q3.experts, q3.top_k, q3.expert_ffn, q3.shared_experts, q3.kv_heads, q3.d_head) == (128, 8, 768, 0, 4, 128)
    gpt2 = model_from_config(HF / "gpt2_config.json", seq=512)
    assert gpt2.bias and gpt2.learned_positions and gpt2.tied_embeddings and not gpt2.gated_mlp and gpt2.seq == 512


def _broken(tmp_path, change: dict, drop: str | None = None) -> Path:
    cfg = {**json.loads((HF / "llama3_8b_config.json").read_text()), **change}
    cfg.pop(drop, None)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize(
    ("change", "drop", "field"),
    [
        ({}, "hidden_size", "hidden_size"),
        ({}, "num_attention_heads", "num_attention_heads"),
        ({"model_type": "t5"}, None, "model_type"),
        ({"num_hidden_layers": "32"}, None, "num_hidden_layers"),
        ({"hidden_act": "tanh"}, None, "hidden_act"),
        ({"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2}, None, "moe_intermediate_size"),
    ],
)
def test_a_missing_or_unknown_field_is_named(tmp_path, change, drop, field):
    with pytest.raises(InputError) as err:
        model_from_config(_broken(tmp_path, change, drop))
    assert err.value.field == field and field in str(err.value)


@pytest.mark.parametrize("content", [b"\x1f\x8b\x08 not json", b"[1, 2]", b'{"model_type": '])
def test_a_file_that_is_not_a_config_says_so(tmp_path, content):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        model_from_config(path)
    assert err.value.field == "hf_config" and "config.json" in str(err.value)
