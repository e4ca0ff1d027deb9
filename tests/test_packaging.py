"""`pip install ".[web]"` gives a working app: the extra names every runtime package app.py needs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name_and_extras(requirement: str) -> tuple[str, set[str]]:
    m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement)
    assert m, requirement
    name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    return name, {e.strip() for e in (m.group(2) or "").split(",") if e.strip()}


def test_the_web_extra_covers_every_runtime_requirement():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared: dict[str, set[str]] = {}
    for req in project["dependencies"] + project["optional-dependencies"]["web"]:
        name, extras = _name_and_extras(req)
        declared.setdefault(name, set()).update(extras)
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, extras = _name_and_extras(line)
        assert name in declared, f"requirements.txt has {name}, but pyproject's [web] extra does not"
        assert extras <= declared[name], f"{name} needs the extras {sorted(extras - declared[name])} in [web]"
