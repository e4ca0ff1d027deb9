"""Schedule generators, one module per family, all entered in one registry."""

from . import classic, dualpipe, interleaved, interleaved_zb, vshape, zero_bubble  # noqa: F401  (importing registers the schedules)
from .registry import MAX_ACTIONS, REGISTRY, Param, Spec, build, formula, get

__all__ = ["MAX_ACTIONS", "REGISTRY", "Param", "Spec", "build", "formula", "get"]
