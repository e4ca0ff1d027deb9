"""The measured-run view in a real browser: the traces of a 4-rank run chosen at once in the file input
draw the run against its simulation, and the what-if link opens the abstract view with the fitted costs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from layout_checks import wait_for

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "measured" / "torch-2.13" / "1f1b-runtime-4r"
TRACES = sorted(RUN.glob("rank*.trace.json.gz"))


def test_uploaded_traces_draw_the_run_against_its_simulation(dash_duo, tmp_path):
    expected = json.loads(subprocess.run(
        [sys.executable, "-m", "ppviz", "measured", *map(str, TRACES), "--what-if", "zb-v", "--json"],
        capture_output=True, text=True, check=True).stdout)  # fmt: skip
    page = dash_duo
    page.driver.get(page.server_url + "/measured")
    page.wait_for_element("#measured-view", timeout=30)
    page.find_element("#upload-measured input[type=file]").send_keys("\n".join(map(str, TRACES)))
    page.wait_for_contains_text("#summary-measured", "4 ranks, 4 stages, 8 microbatches", timeout=60)
    names = page.driver.execute_script(
        "const gd = document.querySelector('#gantt-measured .js-plotly-plot'); return gd.data.map(t => t.name);"
    )
    assert "F forward" in names and "F forward (simulated)" in names
    ticks = page.driver.execute_script(
        "return [...document.querySelectorAll('#gantt-measured .ytick text')].map(t => t.textContent);"
    )
    assert ticks[:2] == ["rank 0 measured", "rank 0 simulated"] and len(ticks) == 8
    page.driver.save_screenshot(str(tmp_path / "measured.png"))
    assert "run=" in page.driver.current_url  # the files' key and the options: a reload keeps the view
    page.find_element("#what-if-link-measured").click()
    wait_for(lambda: page.find_elements("#abstract-view"), "the abstract view opens", timeout=30)
    makespan = expected["what_if"][0]["makespan_s"] * 1e3
    page.wait_for_contains_text("#card-makespan", f"{makespan:g}", timeout=30)
    assert "stage_times=" in page.driver.current_url and "host_overhead=" in page.driver.current_url
    assert page.get_logs() == []


def test_files_past_the_cap_get_a_message_and_never_travel(dash_duo, tmp_path):
    from ppviz.web.pages.measured.uploads import MAX_UPLOAD_BYTES

    big = tmp_path / "rank0.trace.json"
    big.write_bytes(b" " * (MAX_UPLOAD_BYTES + 1))
    page = dash_duo
    page.driver.get(page.server_url + "/measured")
    page.wait_for_element("#measured-view", timeout=30)
    page.find_element("#upload-measured input[type=file]").send_keys(str(big))
    page.wait_for_contains_text("#upload-error-measured", f"the page takes up to {MAX_UPLOAD_BYTES:,} bytes in all")
    assert "run=" not in page.driver.current_url
    assert page.get_logs() == []
