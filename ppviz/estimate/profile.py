"""Calibration profiles: a GPU's efficiencies fitted to one software stack, saved as a JSON file.

Efficiency belongs to the stack (framework, kernels, NCCL, the cluster's network), not to the GPU:
a profile holds the four efficiencies of ``Gpu`` fitted on measured runs of one stack
(``profile_fit.fit``, ``ppviz calibrate``), the runs themselves and the fit's residual. Applying it
replaces those four fields of the GPU it was fitted on (``Profile.apply``); ``ppviz estimate``,
``render`` and ``search`` take it as ``--calibration FILE``, ``ppviz.estimate`` as ``calibration=``.

The file (``FORMAT`` in its ``format`` key; a later layout gets a new number)::

    {"format": "ppviz-calibration/1", "gpu": "v100-sxm2-32gb",
     "efficiencies": {"matmul_efficiency": 0.58, "hbm_efficiency": 0.85, ...},
     "fitted": ["matmul_efficiency"],
     "residual": {"mean_abs_error": 0.004, "max_abs_error": 0.004, "runs": 1},
     "runs": [{"label": ..., "source": ..., "model": {...}, "layout": {...}, "measured_s": ...,
               "default_s": ..., "calibrated_s": ..., "error": ...}]}
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..files import read_capped
from .specs import Gpu, SpecError, override

FORMAT = "ppviz-calibration/1"
FIELDS = ("matmul_efficiency", "hbm_efficiency", "nvlink_efficiency", "network_efficiency")
MAX_PROFILE_BYTES = 5_000_000


@dataclass(frozen=True)
class Profile:
    """The efficiencies of one GPU preset on one stack, with the runs they were fitted on."""

    gpu: str
    efficiencies: tuple[tuple[str, float], ...]  # every name of FIELDS, in that order
    fitted: tuple[str, ...]
    runs: tuple[dict, ...] = ()
    mean_abs_error: float = 0.0
    max_abs_error: float = 0.0
    source: str = ""  # the file it was read from

    def apply(self, gpu: Gpu, keep: tuple[str, ...] = ()) -> Gpu:
        """``gpu`` with this profile's efficiencies (but those named in ``keep``, set explicitly).
        Refuses a GPU other than the one the profile was fitted on."""
        if gpu.name != self.gpu:
            where = f" {self.source}" if self.source else ""
            raise SpecError(
                f"calibration{where} was fitted on {self.gpu}, not {gpu.name}: efficiencies belong to one GPU and "
                f"stack; fit a profile for {gpu.name} (ppviz calibrate --gpu {gpu.name} ...)",
                field="calibration",
            )
        return override(gpu, **{k: v for k, v in self.efficiencies if k not in keep})

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "gpu": self.gpu,
            "efficiencies": dict(self.efficiencies),
            "fitted": list(self.fitted),
            "residual": {
                "mean_abs_error": self.mean_abs_error,
                "max_abs_error": self.max_abs_error,
                "runs": len(self.runs),
            },  # fmt: skip
            "runs": list(self.runs),
        }

    def save(self, path: str | Path) -> None:
        try:
            Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        except OSError as e:
            raise SpecError(f"cannot write {path}: {e.strerror}", field="output") from None


def load(path: str | Path) -> Profile:
    """Read a profile file; a clear error names the file and what is wrong."""
    data = read_capped(path, MAX_PROFILE_BYTES, field="calibration", what="calibration", error=SpecError)
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SpecError(f"calibration {path} is not JSON ({e}): write it with `ppviz calibrate`",
                        field="calibration") from None  # fmt: skip
    return from_dict(doc, str(path))


def from_dict(doc: object, source: str = "") -> Profile:
    """A Profile from the file's JSON object, every field checked."""
    name = f"calibration {source}".strip()

    def bad(what: str):
        return SpecError(f"{name}: {what}", field="calibration")

    if not isinstance(doc, dict):
        raise bad("expected a JSON object")
    if doc.get("format") != FORMAT:
        raise bad(f"format must be {FORMAT!r} (got {doc.get('format')!r}): write it with `ppviz calibrate`")
    gpu = doc.get("gpu")
    if not isinstance(gpu, str) or not gpu:
        raise bad("gpu must name the GPU preset the profile was fitted on")
    eff = doc.get("efficiencies")
    if not isinstance(eff, dict) or sorted(eff) != sorted(FIELDS):
        raise bad(f"efficiencies must give exactly {', '.join(FIELDS)}")
    for k, v in eff.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 < v <= 1:
            raise bad(f"{k} must be a number in (0, 1] (got {v!r})")
    fitted = doc.get("fitted", [])
    if not isinstance(fitted, list) or any(f not in FIELDS for f in fitted):
        raise bad(f"fitted must list names among {', '.join(FIELDS)}")
    residual = doc.get("residual", {})
    runs = doc.get("runs", [])
    if not isinstance(residual, dict) or not isinstance(runs, list):
        raise bad("residual must be an object and runs a list")
    for k in ("mean_abs_error", "max_abs_error"):
        v = residual.get(k, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise bad(f"residual's {k} must be a number ≥ 0 (got {v!r})")
    return Profile(
        gpu, tuple((k, float(eff[k])) for k in FIELDS), tuple(fitted), tuple(runs),
        float(residual.get("mean_abs_error", 0.0)), float(residual.get("max_abs_error", 0.0)), source,
    )  # fmt: skip


def calibrated(gpu: Gpu, calibration: Profile | str | Path | None) -> Gpu:
    """``gpu`` under a profile (or a profile file's path); ``None`` leaves it as it is."""
    if calibration is None:
        return gpu
    prof = calibration if isinstance(calibration, Profile) else load(calibration)
    return prof.apply(gpu)
