"""Real units: a model, a GPU and a parallel layout in; seconds, bytes, tokens/s and MFU out.

No Dash, no Plotly. ``estimate(model, gpu, layout)`` (``ppviz.estimate`` at the top level) builds
the layout's schedule, turns the model into per-stage F/B/W times in seconds and activation sizes
in bytes, simulates the schedule exactly and adds the exposed DP synchronisation and the optimizer
step. ``default_layout(...)`` is a Layout with the defaults every surface uses (``defaults``).
"""

from .iteration import FLOPS_DEFINITION, Estimate, estimate, layout_from, schedule_for
from .specs import Gpu, Layout, Model, SpecError, default_layout, gpu, gpu_names, model, model_names, override

__all__ = [
    "FLOPS_DEFINITION", "Estimate", "Gpu", "Layout", "Model", "SpecError", "default_layout", "estimate", "gpu",
    "gpu_names", "layout_from", "model", "model_names", "override", "schedule_for",
]  # fmt: skip
