"""The model page's path, and its component ids: each ends in ``-model`` so that no two pages share one."""

from ...common.cluster import MODEL_PATH

PATH = MODEL_PATH  # the page's address (in common: the search page opens its rows there)
URL = "url-model"  # the page's location: its hash is the page's state


def cid(name: str) -> str:
    """The component id of one of this view's controls (``tp-model``)."""
    return f"{name}-model"


def card_id(part: str, key: str) -> str:
    """A card's ``value`` or ``detail`` box: the page keeps the boxes and a move sets their text only
    (new elements in a callback's answer cost the browser a pass over the page for each). A string,
    not a pattern id: the renderer finds a string id by one lookup, a dict id by a search of the page."""
    return f"card-{part}-{key}-model"


def bar_id(part: str, row: int) -> str:
    """A breakdown row (``row``) or its ``label``, ``bar`` or ``text``, kept on the page like the cards."""
    return f"breakdown-{part}-{row}-model"


def advice_id(part: str, row: int) -> str:
    """A row of the advice card (``row``), its ``text`` or its ``apply`` button."""
    return f"advice-{part}-{row}-model"


def msg_id(name: str) -> str:
    """A control's message box: a string id like the cards' (see ``card_id``)."""
    return f"msg-{name}-model"


# The control beside which an input error is shown, by the field it names (``ppviz.errors.InputError``,
# fields as the estimate spells them); any other field goes to the schedule picker.
FIELD_CONTROLS = {
    **{name: name for name in ("model", "gpu", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq")},
    **{name: name for name in ("head_dim", "experts", "top_k", "expert_ffn", "shared_experts", "dense_layers")},
    **{name: name for name in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "gbs", "iterations", "recompute", "zero")},
    **{name: name for name in ("tflops", "fp8_tflops", "hbm_gib", "reserve_gib", "hbm_tbs", "nvlink_gbs", "net_gbs")},
    **{f"{part}_efficiency": f"{part}_efficiency" for part in ("matmul", "hbm", "nvlink", "network")},
    "domain": "domain",
    "precision": "precision",
    "hbm_bytes": "hbm_gib",
    "reserve_bytes": "reserve_gib",
    "fp8_flops": "fp8_tflops",
    "bf16_flops": "tflops",
    "chunks": "vpp",
    "microbatches": "gbs",
    "sequence_parallel": "sp",
    "tp_comm_overlap": "tpo",
    "layer_split": "split",
    "edge_fewer": "split",
    "nvlink_domain": "domain",
    "tp_mode": "tp",
    "tp2d": "tp",
    "summa_blocks": "tp",
    "nvlink_dp_pp": "domain",
}
