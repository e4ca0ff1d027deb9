"""Browser tests run Debian's Chromium headless through dash[testing]'s dash_duo (`pytest --headless`)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from selenium.webdriver.chrome.options import Options

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # app.py lives at the repository root


def pytest_setup_options():
    """Chromium from Debian's package, never a browser a tool downloads; dash_duo adds the download dir."""
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    return options


@pytest.fixture
def page(dash_duo):
    """The app served to Chromium (on ``$PPVIZ_TEST_PORT``, so checkouts can test side by side), once
    the abstract view has drawn; generous on a loaded machine."""
    import app

    dash_duo.start_server(app.app, port=int(os.environ.get("PPVIZ_TEST_PORT", "8050")))
    dash_duo.wait_for_contains_text("#card-makespan", "33", timeout=60)
    return dash_duo
