"""The parallel-configuration search: every layout of a model on N GPUs, ranked by its simulated
schedule. No Dash. ``ppviz.search(model, gpu, gpus, global_batch, ...)`` returns a SearchResult
whose ``to_dict()`` is the `ppviz search --json` contract. ``advise(model, gpu, layout)``: the nearest
layouts that fit, for one that does not.
"""

from .advice import Advice, Advised, advise
from .engine import search
from .result import SearchResult, command, row_of
from .space import Options

__all__ = ["Advice", "Advised", "Options", "SearchResult", "advise", "command", "row_of", "search"]
