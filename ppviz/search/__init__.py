"""The parallel-configuration search: every layout of a model on N GPUs, ranked by its simulated
schedule. No Dash. ``ppviz.search(model, gpu, gpus, global_batch, ...)`` returns a SearchResult
whose ``to_dict()`` is the `ppviz search --json` contract.
"""

from .engine import search
from .result import SearchResult, command, row_of
from .space import Options

__all__ = ["Options", "SearchResult", "command", "row_of", "search"]
