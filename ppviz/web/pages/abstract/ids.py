"""Component ids of the abstract page that are built from names (pattern ids for per-schedule controls)."""


def msg_id(name: str) -> dict:
    """Where a control's error or the reason it is disabled is shown."""
    return {"type": "control-msg", "name": name}


def param_id(schedule: str, name: str) -> dict:
    return {"type": "param", "schedule": schedule, "name": name}


def pick_id(value: int) -> dict:
    return {"type": "mb-pick", "value": value}
