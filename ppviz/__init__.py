"""ppviz: exact simulation and visualisation of pipeline-parallel training schedules."""

from . import estimate, search  # callables: ppviz.estimate(model, gpu, layout), ppviz.search(model, gpu, gpus, gbs)
from .api import Run, evaluate, make_costs, simulate
from .costs import Costs
from .ir import Action, Kind, Overlap, Placement, Schedule, from_torch_csv, to_torch_csv
from .schedules import REGISTRY, build
from .simulator import DeadlockError, Result, ScheduleError, validate

__version__ = "0.1.0"


def schedule_names() -> list[str]:
    """Names of every registered schedule."""
    return list(REGISTRY)


__all__ = [
    "Action", "Costs", "DeadlockError", "Kind", "Overlap", "Placement", "REGISTRY", "Result", "Run",
    "Schedule", "ScheduleError", "build", "estimate", "evaluate", "from_torch_csv", "make_costs", "schedule_names",
    "search", "simulate", "to_torch_csv", "validate",
]  # fmt: skip
