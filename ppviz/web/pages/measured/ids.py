"""The measured-run page's path, and its component ids: each ends in ``-measured`` so that no two pages share one."""

PATH = "/measured"  # the page's address (its inputs are the hash: ``/measured#run=…&iteration=5``)
URL = "url-measured"  # the page's location


def cid(name: str) -> str:
    return f"{name}-measured"


# The control beside which an input error is shown, by the field it names (``ppviz.errors.InputError``);
# the core's readers name ``files``, ``order`` (an order CSV) or ``log`` (a Megatron-LM log): the upload.
FIELD_CONTROLS = {
    "files": "upload",
    "order": "upload",
    "log": "upload",
    "iteration": "iteration",
    "pattern": "pattern",
    "naming": "naming",
    "cores": "cores",
    "what_if": "schedule",
}
MESSAGES = tuple(dict.fromkeys(FIELD_CONTROLS.values()))
