"""A real browser for the web view's tests: Debian's chromium driven through its chromium-driver.

Selenium is pointed at ``/usr/bin/chromedriver`` and ``/usr/bin/chromium`` explicitly and runs
offline (``SE_OFFLINE``), so Selenium Manager never downloads a driver or a browser. Chromium runs
headless in a fresh profile with its background traffic off (no sync, no component updates, no
QUIC), and only ever opens 127.0.0.1. `make setup` and .ci/run install both packages when missing;
where they are absent the tests skip, saying why.

The blocking WebDriver calls run in a thread (`asyncio.to_thread`): the ingest app under test is
served by the test's own event loop.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1400",
)


def missing() -> str | None:
    """Why no browser can run here, or None."""
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not tool.exists():
            return f"{tool} is not installed (apt-get install chromium chromium-driver; make setup does it as root)"
    return None


class Browser:
    """One Chromium session; every call runs off the event loop."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    async def get(self, url: str) -> None:
        await asyncio.to_thread(self.driver.get, url)

    async def text(self) -> str:
        return str(await asyncio.to_thread(lambda: self.driver.find_element("tag name", "body").text))

    async def script(self, source: str) -> Any:
        return await asyncio.to_thread(self.driver.execute_script, source)

    async def fill_and_submit(self, field: str, value: str) -> None:
        def run() -> None:
            box = self.driver.find_element("name", field)
            box.clear()
            box.send_keys(value)
            box.submit()

        await asyncio.to_thread(run)

    async def click(self, css: str) -> None:
        await asyncio.to_thread(lambda: self.driver.find_element("css selector", css).click())

    async def screenshot(self, path: Path) -> Path:
        await asyncio.to_thread(self.driver.save_screenshot, str(path))
        return path

    async def cookie(self, name: str) -> dict[str, Any] | None:
        found = await asyncio.to_thread(self.driver.get_cookie, name)
        return dict(found) if found else None

    async def url(self) -> str:
        """The page's URL, read off the event loop: the driver waits for a navigation in flight,
        whose server may be served by this very loop."""
        return str(await asyncio.to_thread(lambda: self.driver.current_url))


@contextmanager
def chromium(profile: Path) -> Iterator[Browser]:
    """A headless Chromium with a fresh profile in ``profile``; quit on exit."""
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager: never download anything
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    service = Service(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    try:
        yield Browser(driver)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
