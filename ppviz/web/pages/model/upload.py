"""A Hugging Face ``config.json`` uploaded on the model page, as the page's own state: the preset whose
architecture matches (norm, biases, MLP, embeddings, positions) with the file's sizes as its field
overrides, so that the link carries the model and a reload keeps it. Plain functions, no Dash.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ppviz.errors import InputError
from ppviz.estimate import hf_config, specs

from ...common import validation
from ...common.cluster import MODEL_FIELDS, ModelState
from ...common.validation import uploaded_text

FIELD = "hf_config"  # the upload's message box
# what a preset fixes and the page has no box for: (Model field, what it means in the config)
ARCHITECTURE = (
    ("gated_mlp", "hidden_act (a gated SiLU MLP)"),
    ("tied_embeddings", "tie_word_embeddings"),
    ("bias", "biases and LayerNorm"),
    ("dropout", "dropout"),
    ("learned_positions", "learned position embeddings"),
    ("flash_attention", "fused attention"),
)


def read(contents: object, filename: object) -> dict:
    """The uploaded file's fields, or an InputError (field ``hf_config``) saying why it is not a config.json."""
    name = filename if isinstance(filename, str) and filename else "the upload"
    text = uploaded_text(contents, name, hf_config.MAX_CONFIG_BYTES, FIELD, ("a config.json", "config.json"))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{name} is not JSON ({e}): upload a Hugging Face config.json", field=FIELD) from None
    if not isinstance(data, dict):
        raise InputError(f"{name} holds JSON but not an object of fields: not a config.json", field=FIELD)
    return data


def state_with(state: ModelState, config: dict, filename: str) -> tuple[ModelState, list[str]]:
    """``state`` with the config's model: the closest preset, the config's sizes as overrides (the
    sequence length kept: a config holds the longest context, not the training one), and a note per
    architecture setting the page cannot carry."""
    seq = int(state.field_value("seq"))
    model = hf_config.model_from_config(config, seq=seq, name=filename)
    preset, differ = closest_preset(model)
    base = specs.model(preset)
    over = {n: getattr(model, n) for n in MODEL_FIELDS if getattr(model, n) != getattr(base, n)}
    for name, value in over.items():
        f = MODEL_FIELDS[name]
        if not f.low <= value <= f.high:
            raise InputError(f"config.json gives {name} {value:,}: the page takes {f.low:g}–{f.high:,g}", field=FIELD)
    notes = [f"model from {filename} ({config.get('model_type')}) on {preset}'s architecture"]
    notes += [
        f"{what} {'on' if getattr(model, field) else 'off'} is not carried by the page, which counts {preset}'s; "
        f"`ppviz estimate --hf-config {filename}` carries it"
        for field, what in ARCHITECTURE
        if field in differ
    ]
    if config.get("max_position_embeddings", seq) != seq:
        notes.append(f"sequence length kept at {seq:,} (the config's longest context is "
                     f"{validation.show(config.get('max_position_embeddings'))})")  # fmt: skip
    return replace(state, model=preset, model_over=over), notes


def closest_preset(model: specs.Model) -> tuple[str, set[str]]:
    """The preset sharing most of the model's architecture settings (MoE presets for MoE models first),
    and the settings it does not share."""

    def differ(name: str) -> set[str]:
        p = specs.model(name)
        return {f for f, _ in ARCHITECTURE if getattr(p, f) != getattr(model, f)}

    names = specs.model_names()
    best = min(names, key=lambda n: (len(differ(n)), specs.model(n).moe != model.moe))
    return best, differ(best)
