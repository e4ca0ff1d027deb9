"""ppviz: exact simulation and visualisation of pipeline-parallel training schedules.

``ppviz.estimate`` and ``ppviz.search`` are the functions (real units, the layout search); their
subpackages stay importable by name: ``from ppviz.estimate import Layout``.
"""

from .api import Run, evaluate, make_costs, simulate
from .costs import Costs
from .errors import InputError
from .estimate import Estimate, Gpu, Layout, Model, SpecError, default_layout, estimate
from .ir import Action, Kind, Overlap, Placement, Schedule, from_torch_csv, to_torch_csv
from .schedules import REGISTRY, build
from .search import SearchResult, search
from .simulator import DeadlockError, Result, ScheduleError, validate

__version__ = "0.1.0"


def schedule_names() -> list[str]:
    """Names of every registered schedule."""
    return list(REGISTRY)


__all__ = [
    "Action", "Costs", "DeadlockError", "Estimate", "Gpu", "InputError", "Kind", "Layout", "Model", "Overlap",
    "Placement", "REGISTRY", "Result", "Run", "Schedule", "ScheduleError", "SearchResult", "SpecError", "build",
    "default_layout", "estimate", "evaluate", "from_torch_csv", "make_costs", "schedule_names", "search", "simulate",
    "to_torch_csv", "validate",
]  # fmt: skip
