"""Layout expectations any view of the page must meet, checked in the browser: nothing on screen
overlaps anything else, and the charts' time axes are in view without scrolling.

One call each (``assert_no_overlaps(driver)``, ``assert_axes_visible(driver, charts)``), so a new view
(compare mode, a sweep) is checked by calling them after drawing it.
"""

from __future__ import annotations

import time
from pathlib import Path

# What a user reads or clicks. Two of these must not overlap unless one contains the other in the DOM
# (a legend item sits inside its chart by design).
MEANINGFUL = (
    ".header h1",
    ".subtitle",
    ".share",
    "#view-tabs .tab",
    ".card",
    ".group-title",
    ".group h3",
    ".control > .label",
    ".control input:not(.dash-dropdown-focus-target)",
    ".control .dash-dropdown",
    ".control .help",
    ".picks",
    ".msg-error",
    ".msg-reason",
    ".msg-note",
    ".dash-graph",
    ".modebar-container .modebar",
    ".legend .traces",
    ".colorbar",  # an overview's colour bar
    ".gtitle",
    ".annotation",  # a compared schedule's title over its Gantt, a sweep's notes
    '.infolayer g[class^="g-x"][class$="title"]',  # every x axis's title (g-xtitle, g-x4title, …)
    '.infolayer g[class^="g-y"][class$="title"]',
    '.xaxislayer-above g[class^="x"][class$="tick"] text',  # every x axis's tick labels (xtick, x4tick, …)
    ".ag-root-wrapper",  # the search's table, the abstract view's ranking and stage table
    "table.ranking",  # the compare ranking (model view)
    ".mode label",  # the mode and compare bar's radio choices
    "button",
)

_COLLECT = """
const selectors = arguments[0];
const seen = new Set(), items = [];
const shown = el => {
  if (!el.getClientRects().length) return false;
  // a closed <details> keeps its content laid out, unseen (content-visibility), all but its summary
  const closed = el.closest('details:not([open])');
  if (closed && !(closed.querySelector(':scope > summary') || closed).contains(el)) return false;
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    const s = getComputedStyle(e);
    if (s.display === 'none' || s.visibility === 'hidden') return false;
  }
  return true;
};
const name = el => {
  const id = el.id ? '#' + el.id : '';
  const cls = (el.getAttribute('class') || '').trim().split(/\\s+/).slice(0, 2).join('.');
  const text = (el.textContent || '').trim().slice(0, 30);
  const chart = el.closest('.dash-graph');
  return `${chart ? chart.id + ' ' : ''}${el.tagName.toLowerCase()}${id}${cls ? '.' + cls : ''} "${text}"`;
};
for (const sel of selectors) {
  for (const el of document.querySelectorAll(sel)) {
    if (seen.has(el) || !shown(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    seen.add(el);
    items.push({el, sel, r, name: name(el)});
  }
}
const tol = arguments[1], out = [];
for (let i = 0; i < items.length; i++) {
  for (let j = i + 1; j < items.length; j++) {
    const a = items[i], b = items[j];
    if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
    const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
    const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
    if (w > tol && h > tol) {
      out.push(`${a.name} [${a.sel}] overlaps ${b.name} [${b.sel}] by ${w.toFixed(1)}×${h.toFixed(1)} px`);
    }
  }
}
return {count: items.length, overlaps: out};
"""


def overlaps(driver, selectors=MEANINGFUL, tolerance_px: float = 2.0) -> tuple[int, list[str]]:
    """(how many visible elements were checked, each overlapping pair described)."""
    found = driver.execute_script(_COLLECT, list(selectors), tolerance_px)
    return found["count"], found["overlaps"]


def assert_no_overlaps(driver, selectors=MEANINGFUL, tolerance_px: float = 2.0, at_least: int = 10) -> None:
    """No two visible meaningful elements overlap by more than ``tolerance_px`` in both directions."""
    count, found = overlaps(driver, selectors, tolerance_px)
    assert count >= at_least, f"only {count} visible elements found: is the view drawn?"
    assert not found, f"{len(found)} overlaps:\n" + "\n".join(found[:20])


_AXES = """
const out = {};
for (const chart of arguments[0]) {
  const gd = document.querySelector('#' + chart + ' .js-plotly-plot');
  // the lowest x axis title drawn (a compare chart titles only its last time axis)
  const titles = gd ? [...gd.querySelectorAll('.infolayer g[class^="g-x"][class$="title"]')]
    .filter(t => t.textContent.trim()) : [];
  const ticks = gd ? [...gd.querySelectorAll('.xaxislayer-above g[class^="x"][class$="tick"] text')] : [];
  out[chart] = {
    title: titles.length ? Math.max(...titles.map(t => t.getBoundingClientRect().bottom)) : null,
    ticks: ticks.length ? Math.max(...ticks.map(t => t.getBoundingClientRect().bottom)) : null,
    top: gd ? gd.getBoundingClientRect().top : null,
  };
}
return {charts: out, height: window.innerHeight, scroll: window.scrollY};
"""


def assert_axes_visible(driver, charts=("gantt", "memory")) -> None:
    """Each chart's time axis (its tick labels and title) is inside the viewport, unscrolled."""
    found = driver.execute_script(_AXES, list(charts))
    assert found["scroll"] == 0, found
    for chart, box in found["charts"].items():
        assert box["ticks"] is not None and box["title"] is not None, f"{chart} has no time axis drawn: {found}"
        assert box["top"] >= 0 and box["ticks"] <= found["height"] and box["title"] <= found["height"], (
            f"{chart}'s time axis is off the {found['height']} px screen: {found}"
        )


def set_viewport(driver, width: int, height: int) -> None:
    """Resize the window so that the page's viewport (window chrome aside) is width × height."""
    driver.set_window_size(width, height)
    for _ in range(3):
        inner = driver.execute_script("return [window.innerWidth, window.innerHeight];")
        if inner == [width, height]:
            return
        size = driver.get_window_size()
        driver.set_window_size(size["width"] + width - inner[0], size["height"] + height - inner[1])
        time.sleep(0.2)
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight];")
    assert inner == [width, height], f"the viewport is {inner}, not {[width, height]}"


def screenshot(driver, directory: Path, name: str) -> Path:
    """Save what the browser shows (a test artefact, never committed)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def chart(duo, name: str, script: str):
    """Run ``script`` with ``gd`` bound to the Plotly chart inside the element ``#name``."""
    return duo.driver.execute_script(f"const gd = document.querySelector('#{name} .js-plotly-plot'); {script}")


def wait_for(check, what: str, timeout: float = 20):
    """Poll ``check`` until it holds, and return what it gave; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while not (value := check()):
        assert time.time() < deadline, f"never: {what}"
        time.sleep(0.1)
    return value
