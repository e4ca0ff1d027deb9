"""The web package's shape: pages never import each other, common/ never imports a page, and every
page callback names its outputs (a dict), so no answer is built or read by position."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

import pytest

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


def test_the_four_pages_exist_with_the_same_parts():
    """Each page is a package with its state, layout, callbacks, render and ids."""
    assert PAGES == ["abstract", "measured", "model", "search"]
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
    assert found >= 14  # the four pages' server callbacks are all seen


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

    from ppviz.web.pages.measured import ids as measured_ids
    from ppviz.web.pages.measured.layout import measured_view

    layout = str(measured_view())
    for control in set(measured_ids.FIELD_CONTROLS.values()):
        assert repr(f"msg-{control}-measured") in layout, control


def web_entries(run, code) -> list[str]:
    """The modules of ``ppviz/web`` entered while the function of ``code`` runs (itself first), in order:
    a call from one module (or from outside ``ppviz/web``: Dash, the core) into another is an entry;
    calls within a module are not. A module in the list twice was entered again after it was left."""
    order, running = [], None

    def module(path: str) -> str | None:
        return str(Path(path).relative_to(WEB)) if Path(path).is_relative_to(WEB) else None

    def profile(frame, event, _arg):
        nonlocal running
        if event == "call" and running is None and frame.f_code is code:
            running = frame
            order.append(module(code.co_filename))
        elif event == "return" and frame is running:
            running = None
        elif event == "call" and running is not None:
            callee = module(frame.f_code.co_filename)
            caller = module(frame.f_back.f_code.co_filename) if frame.f_back else None
            if callee is not None and callee != caller:
                order.append(callee)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return order


def model_move(hash_: str = "", moved: tuple[str, str] = ("gbs-model", "value"), values=(72, 64)) -> list[str]:
    """The web modules one model-page move enters, as the browser sends it through Dash's dispatch (caches
    warm: a move the page has seen before, drawn synchronously), on the page opened at ``hash_``: ``moved``
    (by default the global batch; the hash itself: a link opened, Back or Forward) is changed to
    ``values[0]`` first and then, measured, to ``values[1]``."""
    from web_dispatch import Page, answer

    from ppviz.web.common import cluster
    from ppviz.web.pages.model import callbacks

    page = Page.open(app.server, cluster.MODEL_PATH, hash_)
    page.load()
    dep = page.callback("drawn-model.data")
    answer(page.fire(dep, [moved], {moved: values[0]}))
    return web_entries(
        lambda: answer(page.fire(dep, [moved], {moved: values[1]})),
        callbacks.update_model_view.__code__,
    )


def test_a_model_page_move_enters_no_more_web_modules_than_today():
    """Measured with ``sys.setprofile`` during the move's callback: 13 modules and 109 entries before the
    pages router (digests in their own module, every number bounded by its own call); 11 and 40 after it,
    12 and 41 with the check that says why beside a box holding no valid number; 5 and 5 since the request
    is read once (``cluster.read``: one call into validation, everything derived) and drawn once
    (``render.render``: one call into limits for the prices)."""
    order = model_move()
    assert order == [
        "pages/model/callbacks.py",
        "common/cluster.py",
        "common/validation.py",
        "pages/model/render.py",
        "common/limits.py",
    ], Counter(order)


MOVES = {
    "one schedule": {},
    "compare": {"hash_": "#mode=compare&compare=1f1b,zb-h1,zb-v"},
    "a link opened": {"moved": ("url-model", "hash"), "values": ("#gbs=128&tp=4", "#gbs=64&tp=2")},
}


@pytest.mark.parametrize("move", MOVES.values(), ids=MOVES.keys())
def test_a_model_page_move_passes_through_at_most_5_web_modules_each_once(move):
    """Issue #19: control → state → validation → core → render → outputs, at most 5 modules of ppviz/web, each
    once, with one schedule and comparing three (the comparison's text formats its differences with
    ``ppviz.units``, not a web module)."""
    counts = Counter(model_move(**move))
    assert len(counts) <= 5 and set(counts.values()) == {1}, counts
