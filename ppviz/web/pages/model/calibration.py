"""A calibration profile uploaded on the model page (``ppviz calibrate -o FILE``), as the page's own state:
its GPU preset with the profile's four efficiencies as the GPU's field overrides, so that the link
carries them and the page gives ``ppviz estimate --calibration FILE``'s numbers. Plain functions, no Dash.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ppviz.errors import InputError
from ppviz.estimate import profile, specs
from ppviz.web.protocol import MAX_BODY_BYTES

from ...common.cluster import GPU_FIELDS, ModelState, preset_value
from ...common.validation import uploaded_text

FIELD = "calibration"  # the upload's message box
# A request carries at most MAX_BODY_BYTES, the file in it as base64 (4 bytes for 3): the page takes profiles
# up to what travels (a profile is a few kB; the CLI reads up to profile.MAX_PROFILE_BYTES).
MAX_UPLOAD_BYTES = min(profile.MAX_PROFILE_BYTES, (MAX_BODY_BYTES - 64 * 1024) * 3 // 4)
WHAT = ("a calibration profile written by `ppviz calibrate -o FILE`", "profile")


def read(contents: object, filename: object) -> profile.Profile:
    """The uploaded profile, every field checked (``profile.from_dict``), or an InputError (field
    ``calibration``) saying why the file is not one."""
    name = filename if isinstance(filename, str) and filename else "the upload"
    text = uploaded_text(contents, name, MAX_UPLOAD_BYTES, FIELD, WHAT)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{name} is not JSON ({e}): upload {WHAT[0]}", field=FIELD) from None
    prof = profile.from_dict(doc, name)
    if prof.gpu not in specs.gpu_names():
        raise InputError(f"{name} was fitted on {prof.gpu!r}, not a GPU preset of this page", field=FIELD)
    for key, value in prof.efficiencies:
        if value < GPU_FIELDS[key].low:
            raise InputError(f"{name}: {key} {value:g} is below the page's {GPU_FIELDS[key].low:g}", field=FIELD)
    return prof


def state_with(state: ModelState, prof: profile.Profile) -> ModelState:
    """``state`` on the profile's GPU preset (its other fields the preset's) with the profile's efficiencies."""
    over = {k: v for k, v in prof.efficiencies if v != preset_value(prof.gpu, k)}
    return replace(state, gpu=prof.gpu, gpu_over=over)


def summary(prof: profile.Profile, filename: str) -> str:
    """ "calibrated: jean-zay.json, v100-sxm2-32gb, matmul 0.58 fitted on 1 run, residual 0.4%"."""
    eff = dict(prof.efficiencies)
    fitted = ", ".join(f"{k.removesuffix('_efficiency')} {eff[k]:.3g}" for k in prof.fitted) or "no efficiency"
    runs = len(prof.runs)
    return (
        f"calibrated: {filename}, {prof.gpu}, {fitted} fitted on {runs} run{'' if runs == 1 else 's'}, "
        f"residual {prof.mean_abs_error:.1%}"
    )
