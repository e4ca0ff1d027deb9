"""Measured runs in: readers (PyTorch CSVs, Kineto traces, Megatron-LM logs) → one ``MeasuredRun`` →
fitted per-stage costs → the same order simulated under them → the gap. No torch needed.

    run = read_run(["rank0.trace.json.gz", "rank1.trace.json.gz"])
    fitted = fit(run)                    # per-stage F/B/W, p2p and host overhead, with spread and samples
    c = compare(run)                     # the same order simulated under fitted.costs() (cores=C: shared)
    to_dict(c)                           # the `ppviz measured --json` object
"""

from .compare import Comparison, compare, to_dict
from .fit import Fit, fit
from .read import read, read_run
from .run import Comm, MeasuredRun, Op

__all__ = ["Comm", "Comparison", "Fit", "MeasuredRun", "Op", "compare", "fit", "read", "read_run", "to_dict"]
