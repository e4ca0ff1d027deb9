"""Real units: a model, a GPU and a parallel layout in; seconds, bytes, tokens/s and MFU out.

No Dash, no Plotly. ``estimate(model, gpu, layout)`` builds the layout's schedule, turns the model
into per-stage F/B/W times in seconds and activation sizes in bytes, simulates the schedule exactly
and adds the exposed DP synchronisation and the optimizer step.
"""

import sys

from .iteration import FLOPS_DEFINITION, Estimate, estimate, layout_from, schedule_for
from .specs import Gpu, Layout, Model, SpecError, gpu, gpu_names, model, model_names, override

__all__ = [
    "FLOPS_DEFINITION", "Estimate", "Gpu", "Layout", "Model", "SpecError", "estimate", "gpu", "gpu_names",
    "layout_from", "model", "model_names", "override", "schedule_for",
]  # fmt: skip


class _CallableModule(sys.modules[__name__].__class__):
    """``ppviz.estimate(model, gpu, layout)`` calls ``estimate``, while ``ppviz.estimate.Layout``
    and ``from ppviz.estimate import ...`` still reach this subpackage."""

    def __call__(self, model, gpu, layout, **kw) -> Estimate:
        return estimate(model, gpu, layout, **kw)


sys.modules[__name__].__class__ = _CallableModule
