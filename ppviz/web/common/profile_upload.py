"""A calibration profile (``ppviz calibrate``'s JSON file) uploaded on a page: read and checked as the
CLI's ``--calibration`` reads it (``ppviz.estimate.profile.from_dict``), with the page's own bounds.
Plain functions, no Dash.
"""

from __future__ import annotations

import json

from ppviz.errors import InputError
from ppviz.estimate import profile, specs
from ppviz.web.protocol import MAX_UPLOAD_BYTES

from .validation import uploaded_text

FIELD = "calibration"  # the upload's message box, and the field of its errors
# What one request can carry (protocol.MAX_UPLOAD_BYTES, about 1.4 MiB; a fitted profile is a few KB); the CLI
# reads up to profile.MAX_PROFILE_BYTES.
MAX_BYTES = min(profile.MAX_PROFILE_BYTES, MAX_UPLOAD_BYTES)
EFFICIENCY_RANGE = (0.01, 1.0)  # what the page's efficiency fields take (the model page's boxes too)
FILE = ("a calibration profile (.json, from ppviz calibrate)", "profile")


def read(contents: object, filename: object) -> profile.Profile:
    """The uploaded profile, or an InputError (field ``calibration``) saying why it is not one the page
    can use: too large, not UTF-8, not JSON, not ``ppviz-calibration/1``, a GPU preset this version does
    not have, or an efficiency outside the page's range."""
    name = filename if isinstance(filename, str) and filename else "the upload"
    text = uploaded_text(contents, name, MAX_BYTES, FIELD, FILE)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{name} is not JSON ({e}): upload a profile written by `ppviz calibrate`",
                         field=FIELD) from None  # fmt: skip
    prof = profile.from_dict(doc, name)
    if prof.gpu not in specs.gpu_names():
        raise InputError(f"{name} was fitted on {prof.gpu!r}, which is not a GPU preset here "
                         f"({', '.join(specs.gpu_names())})", field=FIELD)  # fmt: skip
    low, high = EFFICIENCY_RANGE
    for key, value in prof.efficiencies:
        if not low <= value <= high:
            raise InputError(f"{name}: {key} {value:g} is outside {low:g}–{high:g}, what the page takes", field=FIELD)
    return prof


def line(prof: profile.Profile, filename: str) -> str:
    """One line naming the file, its GPU, its efficiencies (the fitted ones marked) and its residual, the
    same on every page: "calibrated: jean-zay.json, v100-sxm2-32gb; matmul 0.58 (fitted), …; residual: …"."""
    effs = ", ".join(
        f"{key.removesuffix('_efficiency')} {value:.3g}{' (fitted)' if key in prof.fitted else ''}"
        for key, value in prof.efficiencies
    )
    runs = len(prof.runs)
    residual = (
        f"residual: mean {prof.mean_abs_error:.1%}, max {prof.max_abs_error:.1%} over {runs} run{'s' * (runs != 1)}"
    )
    return f"calibrated: {filename}, {prof.gpu}; {effs}; {residual}"
