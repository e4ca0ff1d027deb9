"""Screenshot layout tests at a laptop's 1280×800 and a desktop's 1920×1080: in every view nothing
overlaps anything else, and at 8 devices both charts' time axes are on screen without scrolling.

Screenshots are saved under pytest's tmp dir (``.../layout-shots/``) for a human to look at.
"""

from __future__ import annotations

import os
import time

import pytest
from layout_checks import assert_axes_visible, assert_no_overlaps, screenshot, set_viewport

pytestmark = pytest.mark.browser

SCREENS = ((1280, 800), (1920, 1080))


@pytest.fixture
def page(dash_duo):
    import app

    dash_duo.start_server(app.app, port=int(os.environ.get("PPVIZ_TEST_PORT", "8050")))
    dash_duo.wait_for_contains_text("#card-makespan", "33", timeout=20)
    return dash_duo


@pytest.fixture
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("layout-shots")


def chart(duo, name: str, script: str):
    return duo.driver.execute_script(f"const gd = document.querySelector('#{name} .js-plotly-plot'); {script}")


def wait_for(check, what: str, timeout: float = 20):
    deadline = time.time() + timeout
    while not check():
        assert time.time() < deadline, f"never: {what}"
        time.sleep(0.1)


def wait_drawn(duo, gantt: str, memory: str, title: str) -> None:
    """The Gantt's title shows ``title`` and the memory chart has its curves, then the page settles."""
    wait_for(lambda: title in (chart(duo, gantt, "return (gd && gd.layout.title.text) || '';") or ""), title)
    wait_for(lambda: chart(duo, memory, "return gd && gd.data.length;"), f"{memory} drawn")
    time.sleep(0.8)  # let plotly finish the legend and ticks after a resize


@pytest.mark.parametrize("width,height", SCREENS)
def test_abstract_view_at_8_and_32_devices(page, shots, width, height):
    """ZB-V (overlapped pairs: the longest legend) and interleaved 1F1B with 4 chunks."""
    set_viewport(page.driver, width, height)
    for schedule, devices, extra in (
        ("zb-v", 8, ""),
        ("interleaved-1f1b", 8, "&interleaved-1f1b.chunks=4"),
        ("dualpipe", 8, ""),
        ("zb-v", 32, ""),
    ):
        page.driver.get(page.server_url + f"/?schedule={schedule}&devices={devices}&microbatches=16{extra}")
        wait_drawn(page, "gantt", "memory", f"{schedule} · {devices} devices")
        screenshot(page.driver, shots, f"abstract_{schedule}_p{devices}_{width}x{height}")
        assert_no_overlaps(page.driver)
        if devices == 8:
            assert_axes_visible(page.driver, ("gantt", "memory"))
    assert page.get_logs() == []
