"""The web package's shape: pages never import each other, common/ never imports a page, and every
page callback names its outputs (a dict), so no answer is built or read by position."""

from __future__ import annotations

import ast
from pathlib import Path

import app
import ppviz.web

WEB = Path(ppviz.web.__file__).parent
PAGES = sorted(p.name for p in (WEB / "pages").iterdir() if (p / "__init__.py").exists())


def imported(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports (relative imports resolved)."""
    package = ".".join(path.relative_to(WEB.parent.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = f"{base}.{node.module}" if node.level and node.module else node.module or base
            names |= {module} | {f"{module}.{a.name}" for a in node.names}
    return names


def test_the_three_pages_exist_with_the_same_parts():
    """Each page is a package with its state, layout, callbacks, render and ids."""
    assert PAGES == ["abstract", "model", "search"]
    for page in PAGES:
        parts = {p.stem for p in (WEB / "pages" / page).glob("*.py")}
        assert {"state", "layout", "callbacks", "render", "ids"} <= parts, page


def test_no_page_imports_another_page():
    for page in PAGES:
        for path in (WEB / "pages" / page).glob("*.py"):
            others = {
                name
                for name in imported(path)
                for other in PAGES
                if other != page and name.startswith(f"ppviz.web.pages.{other}")
            }
            assert not others, f"{path.relative_to(WEB)} imports {sorted(others)}"


def test_common_never_imports_a_page_or_the_shell():
    for path in (WEB / "common").glob("*.py"):
        bad = {n for n in imported(path) if n.startswith(("ppviz.web.pages", "ppviz.web.shell"))}
        assert not bad, f"{path.relative_to(WEB)} imports {sorted(bad)}"


def test_every_page_callback_names_its_outputs():
    """A callback with more than one output declares them as a dict (Dash's output={...} form)."""
    found = 0
    for callback in app.app.callback_map.values():
        module = getattr(callback.get("callback"), "__module__", "")
        if not module.startswith("ppviz.web.pages"):
            continue
        found += 1
        shape = callback["outputs_indices"]  # the outputs' grouping: a dict when named, an int for a single one
        assert isinstance(shape, (dict, int)), f"{module}.{callback['callback'].__name__} returns by position"
    assert found >= 12  # the three pages' server callbacks are all seen


def test_every_field_maps_to_a_control_that_shows_messages():
    """Each page's field → control map points at controls that have a message box on that page."""
    from ppviz.web.pages.abstract import ids as abstract_ids
    from ppviz.web.pages.abstract.layout import layout as abstract_layout
    from ppviz.web.pages.model import ids as model_ids
    from ppviz.web.pages.model.layout import MESSAGE_NAMES

    layout = str(abstract_layout())
    for control in set(abstract_ids.FIELD_CONTROLS.values()):
        assert repr(abstract_ids.msg_id(control)) in layout, control
    assert set(model_ids.FIELD_CONTROLS.values()) <= set(MESSAGE_NAMES)
