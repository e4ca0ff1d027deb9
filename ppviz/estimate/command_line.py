"""The `ppviz estimate` command line of a model, GPU and layout: what the page, the search's rows
and the exports show, so that running it gives back the same numbers exactly."""

from __future__ import annotations

import math
import shlex
from functools import lru_cache

from ..errors import InputError
from . import hf_config, specs


def command(model: specs.Model, gpu: specs.Gpu, layout: specs.Layout) -> str:
    """The `ppviz estimate` command line that gives this model, GPU and layout back exactly: the
    presets, every override of them, and every layout field that differs from the bare record or
    from the defaults (sequence parallelism always, as its default depends on tp)."""
    lay = layout
    parts = ["ppviz estimate", model_flag(model), f"--gpu {gpu.name}", *overrides(model, gpu)]
    parts += [f"--{k} {getattr(lay, k)}" for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs")]
    if lay.gbs is not None:
        parts.append(f"--gbs {lay.gbs}")
    parts += [f"--schedule {lay.schedule}", f"--recompute {lay.recompute}", f"--zero {lay.zero}"]
    parts.append("--sequence-parallel" if lay.sequence_parallel else "--no-sequence-parallel")
    if lay.precision != "bf16":
        parts.append(f"--precision {lay.precision}")
    for name, flag in (("tp_comm_overlap", "--tp-comm-overlap"), ("pair_overlap", "--pair-overlap")):
        if getattr(lay, name):
            parts.append(flag)
    if not lay.dp_overlap:
        parts.append("--no-dp-overlap")
    if lay.b_frees:
        parts.append(f"--b-frees {lay.b_frees!r}")
    for name, value in lay.schedule_params:
        parts.append(f"--{name.replace('_', '-')} {value}")
    if lay.tp_mode == "2d":
        parts.append(f"--tp-mode 2d --tp2d {lay.tp2d[0]},{lay.tp2d[1]}")
        if lay.summa_blocks:
            parts.append(f"--summa-blocks {lay.summa_blocks}")
    if lay.nvlink_dp_pp:
        parts.append(f"--nvlink-dp-pp {lay.nvlink_dp_pp[0]},{lay.nvlink_dp_pp[1]}")
    if lay.layer_split:
        parts.append("--layer-split " + ",".join(map(str, lay.layer_split)))
    if lay.edge_fewer:
        parts.append(f"--edge-fewer {lay.edge_fewer}")
    return " ".join(parts)


def model_flag(model: specs.Model) -> str:
    """``--model NAME`` for a preset; ``--hf-config PATH`` for a model read from a config.json."""
    if model.name in specs.model_names():
        return f"--model {model.name}"
    return f"--hf-config {shlex.quote(model.name)}"


@lru_cache(maxsize=8)
def _base_model(name: str) -> specs.Model | None:
    """The preset or config file a model was made from (read once, not once per command)."""
    if name in specs.model_names():
        return specs.model(name)
    try:
        return hf_config.model_from_config(name, name=name)
    except InputError:  # not a file (a model built in Python): no base to state overrides against
        return None


def overrides(model: specs.Model, gpu: specs.Gpu) -> list[str]:
    """The model and GPU override flags (``--seq 2048``, ``--hbm-gib 40`` ...) that turn the presets
    named ``model.name`` and ``gpu.name`` into this model and GPU."""
    out = []
    gpu_base = specs.gpu(gpu.name) if gpu.name in specs.gpu_names() else None
    for spec, base in ((model, _base_model(model.name)), (gpu, gpu_base)):
        if base is None:
            continue
        for f in specs.override_flags(type(spec)):
            v = getattr(spec, f.field)
            if v == getattr(base, f.field):
                continue
            if f.type is bool:
                out.append(f"--{'' if v else 'no-'}{f.name}")
            else:
                out.append(f"--{f.name} {v if f.unit == 1 else in_unit(v, f.unit)}")
    return out


def in_unit(value: float, factor: float) -> str:
    """``value`` / ``factor`` written so that the CLI's ``float(text) * factor`` gives ``value`` back exactly."""
    x = value / factor
    for _ in range(64):
        if float(repr(x)) * factor == value:
            return repr(x)
        x = math.nextafter(x, math.inf if x * factor < value else -math.inf)
    return repr(value / factor)
