"""A calibration profile uploaded on the model page (``ppviz calibrate -o FILE``), as the page's own state:
its GPU preset with the profile's four efficiencies as the GPU's field overrides, so that the link
carries them and the page gives ``ppviz estimate --calibration FILE``'s numbers. The file is read and
checked by ``common/profile_upload`` (as on the search page). Plain functions, no Dash.
"""

from __future__ import annotations

from dataclasses import replace

from ppviz.estimate import profile

from ...common.cluster import ModelState, preset_value


def state_with(state: ModelState, prof: profile.Profile) -> ModelState:
    """``state`` on the profile's GPU preset (its other fields the preset's) with the profile's efficiencies."""
    over = {k: v for k, v in prof.efficiencies if v != preset_value(prof.gpu, k)}
    return replace(state, gpu=prof.gpu, gpu_over=over)
