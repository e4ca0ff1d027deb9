"""The model page's state beyond its controls: the view at another layout (an advice row's).

The state itself (``ModelState``, its fields, bounds and link form) is ``common.cluster``'s, because
the search page opens its rows in this page and so writes the same keys; a request is read there in
one call (``cluster.read``: the hash and the controls bounded, with everything the view derives from
them) and drawn by ``render``. The page owns the whole hash of ``/model``.
"""

from __future__ import annotations

from dataclasses import replace

from ppviz import REGISTRY

from ...common.cluster import ModelState


def state_of(state: ModelState, lay) -> ModelState:
    """The view at another layout of the same model and GPU (one schedule)."""
    takes_chunks = REGISTRY[lay.schedule].param("chunks") is not None
    return replace(
        state, mode="single", schedule=lay.schedule, tp=lay.tp, pp=lay.pp, dp=lay.dp, cp=lay.cp, ep=lay.ep,
        vpp=lay.vpp if takes_chunks else state.vpp, mbs=lay.mbs, gbs=lay.gbs, sp=lay.sequence_parallel,
        recompute=lay.recompute, zero=lay.zero, split=lay.layer_split, tp_mode=lay.tp_mode, tp2d=lay.tp2d,
        summa_blocks=lay.summa_blocks, nvlink_dp_pp=lay.nvlink_dp_pp,
    )  # fmt: skip
