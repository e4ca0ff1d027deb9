"""The search page's path, and its component ids: each ends in ``-search`` so that no two pages share one."""

PATH = "/search"  # the page's address (its inputs are the hash: ``/search#model=…&gpus=512…``)
URL = "url-search"  # the page's location


def cid(name: str) -> str:
    return f"{name}-search"
