"""Browser tests run Debian's Chromium headless (`pytest --headless`), with dash[testing]'s ``dash_duo`` API.

One app server and one Chromium serve every browser test in a row (starting them took seconds per test);
each test gets a fresh page load, with its own download folder and no storage, permissions
or screen emulation left by the test before it. Both close when the next test is not a browser test.
Under pytest-xdist `scripts/test.sh` sends them all to one worker (tests/conftest.py), which runs them in
a row; a worker's server listens on ``$PPVIZ_TEST_PORT`` plus the worker's index.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from dash.testing.application_runners import ThreadedRunner
from dash.testing.composite import DashComposite
from selenium.webdriver.chrome.options import Options

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # app.py lives at the repository root

BROWSER_DIR = Path(__file__).resolve().parent


def server_port() -> int:
    """``$PPVIZ_TEST_PORT`` (8050 unless set), plus the xdist worker's index (gw0, gw1, …) if any."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(os.environ.get("PPVIZ_TEST_PORT", "8050")) + int(worker.removeprefix("gw"))


def pytest_setup_options():
    """Chromium from Debian's package, never a browser a tool downloads; dash_duo adds the download prefs."""
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


class SharedDuo(DashComposite):
    """A ``dash_duo`` kept open across tests: ``fresh_page`` gives the next test a clean page."""

    def __init__(self, server, **kwargs):
        super().__init__(server, **kwargs)
        self.window = self.driver.get_window_size()

    def fresh_page(self, download_path: Path) -> None:
        """The same tab on a blank page with no history, at the first window size, with no screen emulation,
        storage or granted permissions left for the app's origin, downloads into ``download_path``; then the
        app loaded anew. (Not a new tab: in one, a chart of test_model_page missed its redraw.)"""
        driver = self.driver
        driver.get("about:blank")
        driver.execute_cdp_cmd("Page.resetNavigationHistory", {})  # Chromium keeps 50 entries at most
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.set_window_size(self.window["width"], self.window["height"])
        driver.execute_cdp_cmd("Browser.resetPermissions", {})
        driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": self.server.url, "storageTypes": "all"})
        driver.delete_all_cookies()
        self._download_path = str(download_path)
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(download_path)})
        self.reset_log_timestamp()  # get_logs() reports this test's page only
        self.server_url = self.server.url  # loads the page and waits for Dash's entry point


class Shared:
    """The session's one server and browser, opened by the first browser test, closed after the last."""

    duo: SharedDuo | None = None
    runner: ThreadedRunner | None = None

    @classmethod
    def open(cls, config, download_path: Path) -> SharedDuo:
        if cls.duo is None:
            import app

            cls.runner = ThreadedRunner()
            cls.runner.start(app.app, port=server_port())
            cls.duo = SharedDuo(
                server=cls.runner,
                browser=config.getoption("webdriver"),
                remote=config.getoption("remote"),
                remote_url=config.getoption("remote_url"),
                headless=config.getoption("headless"),
                options=config.hook.pytest_setup_options(),
                download_path=str(download_path),
                percy_assets_root=config.getoption("percy_assets"),
                percy_finalize=config.getoption("nopercyfinalize"),
                pause=config.getoption("pause"),
            )
        return cls.duo

    @classmethod
    def close(cls) -> None:
        if cls.duo is not None:
            cls.duo.__exit__(None, None, None)  # quits Chromium
            cls.duo = None
        if cls.runner is not None:
            cls.runner.__exit__(None, None, None)  # stops the server thread
            cls.runner = None


def pytest_runtest_teardown(item, nextitem):
    """Close the shared browser and server once no browser test follows."""
    if nextitem is None or BROWSER_DIR not in Path(nextitem.path).parents:
        Shared.close()


def pytest_sessionfinish(session, exitstatus):
    Shared.close()  # a run stopped early (-x, Ctrl-C) never reached the last teardown


@pytest.fixture
def dash_duo(request, tmp_path):
    """dash[testing]'s ``dash_duo`` on the shared server and browser, on a fresh page of the app."""
    downloads = tmp_path / "download"
    downloads.mkdir()
    duo = Shared.open(request.config, downloads)
    duo.fresh_page(downloads)
    return duo


@pytest.fixture
def page(dash_duo):
    """The app served to Chromium (on ``server_port()``, so checkouts can test side by side), once
    the abstract view has drawn; generous on a loaded machine."""
    dash_duo.wait_for_contains_text("#card-makespan", "33", timeout=60)
    return dash_duo
