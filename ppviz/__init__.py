"""ppviz: exact simulation and visualisation of pipeline-parallel training schedules.

``ppviz.estimate`` and ``ppviz.search`` are the functions (real units, the layout search); their
subpackages stay importable by name: ``from ppviz.estimate import Layout``.

Every public name is imported on first use (PEP 562), so ``import ppviz`` loads no numpy and a
command loads only the layers it runs (``ppviz simulate`` neither the estimate nor the search).
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from .errors import InputError

if TYPE_CHECKING:
    from .api import Run, evaluate, make_costs, simulate
    from .costs import Costs
    from .estimate import Estimate, Gpu, Layout, Model, SpecError, default_layout, estimate
    from .ir import Action, Kind, Overlap, Placement, Schedule, from_torch_csv, to_torch_csv
    from .schedules import REGISTRY, build
    from .search import SearchResult, search
    from .simulator import DeadlockError, Result, ScheduleError, validate

__version__ = "0.1.0"

# the module each public name lives in, imported when the name is first asked for
_HOMES = {
    **dict.fromkeys(["Run", "evaluate", "make_costs", "simulate"], "api"),
    "Costs": "costs",
    **dict.fromkeys(["Estimate", "Gpu", "Layout", "Model", "SpecError", "default_layout", "estimate"], "estimate"),
    **dict.fromkeys(["Action", "Kind", "Overlap", "Placement", "Schedule", "from_torch_csv", "to_torch_csv"], "ir"),
    **dict.fromkeys(["REGISTRY", "build"], "schedules"),
    **dict.fromkeys(["SearchResult", "search"], "search"),
    **dict.fromkeys(["DeadlockError", "Result", "ScheduleError", "validate"], "simulator"),
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(import_module(f".{home}", __name__), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


def _function(name: str) -> property:
    """``ppviz.<name>``: the function, though the import system sets the loaded subpackage of the
    same name as this package's attribute; any other value set (a test's stand-in) is kept."""

    def get(self):
        value = self.__dict__.get(name)
        return __getattr__(name) if value is None or isinstance(value, ModuleType) else value

    def set_(self, value) -> None:
        self.__dict__[name] = value

    return property(get, set_)


class _Package(ModuleType):
    estimate = _function("estimate")
    search = _function("search")


sys.modules[__name__].__class__ = _Package


def schedule_names() -> list[str]:
    """Names of every registered schedule."""
    from .schedules import REGISTRY

    return list(REGISTRY)


__all__ = [
    "Action", "Costs", "DeadlockError", "Estimate", "Gpu", "InputError", "Kind", "Layout", "Model", "Overlap",
    "Placement", "REGISTRY", "Result", "Run", "Schedule", "ScheduleError", "SearchResult", "SpecError", "build",
    "default_layout", "estimate", "evaluate", "from_torch_csv", "make_costs", "schedule_names", "search", "simulate",
    "to_torch_csv", "validate",
]  # fmt: skip
