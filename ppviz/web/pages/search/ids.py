"""Component ids of the search page: each ends in ``-search`` so that no two pages share one."""


def cid(name: str) -> str:
    return f"{name}-search"
