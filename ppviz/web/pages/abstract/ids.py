"""The abstract page's path, and its component ids that are built from names (pattern ids for per-schedule controls)."""

PATH = "/"  # the page's address (its state is the hash: ``/#schedule=zb-v&devices=8…``)


def msg_id(name: str) -> dict:
    """Where a control's error or the reason it is disabled is shown."""
    return {"type": "control-msg", "name": name}


def param_id(schedule: str, name: str) -> dict:
    return {"type": "param", "schedule": schedule, "name": name}


def pick_id(value: int) -> dict:
    return {"type": "mb-pick", "value": value}


# The control beside which an input error is shown, by the field it names (``ppviz.errors.InputError``);
# a schedule's own parameters go to their slider or box, any other field to the schedule picker.
FIELD_CONTROLS = {
    **{name: name for name in ("devices", "microbatches", "f", "b", "w", "p2p", "overlap", "b_frees", "limit")},
    "latency": "p2p",
    "stage_times": "stage_times",
    "host_overhead": "stage_times",  # the per-stage table's host column
    "order": "upload",
    "gbs": "gbs",
    "mbs": "gbs",
    "lines": "lines",
}
# with an uploaded order, the errors of these go to the upload
SET_BY_ORDER = ("devices", "microbatches", "stage_times", "host_overhead")
