"""Every session's browser: the binaries found once, a `ChromiumBrowser` per session (`chromium`).

Creating a session launches its Chromium; a headful one (`headless: false`) needs Xvfb and is refused
with 400 before anything starts when there is none. Deleting the session closes its browser.
"""

from __future__ import annotations

import logging
import shutil

from bbrowse.service.chromium import ChromiumBrowser
from bbrowse.service.chromium_command import find_chromium
from bbrowse.service.errors import bad_request, browser_unavailable
from bbrowse.service.sessions import Session
from bbrowse.wire import BrowserCreateRequest

log = logging.getLogger("bbrowse.browsers")


class BrowserManager:
    """Finds the binaries once and gives each session its `ChromiumBrowser` (`session.browser`)."""

    def __init__(self, chromium_path: str | None) -> None:
        self.configured = chromium_path
        self.binary = find_chromium(chromium_path)
        self.xvfb_binary = shutil.which("Xvfb")
        if self.binary:
            log.info("chromium: %s", self.binary)
        else:
            log.warning("no Chromium found (%s): sessions will have no browser", chromium_path or "PATH")

    def validate(self, request: BrowserCreateRequest) -> None:
        """Refuse what cannot be honoured before anything starts: a headful session without Xvfb."""
        if not request.headless and not self.xvfb_binary:
            raise bad_request(
                "headless: false runs Chromium under Xvfb, which is not installed "
                "(e.g. `sudo apt-get install xvfb`); use headless: true",
                field="headless",
            )

    async def on_create(self, session: Session) -> None:
        browser = ChromiumBrowser(session, self.binary, self.xvfb_binary, self.configured)
        session.browser = browser
        await browser.start()

    async def on_delete(self, session: Session) -> None:
        if session.browser is not None:
            await session.browser.close()

    def browser(self, session: Session) -> ChromiumBrowser:
        if session.browser is None:
            raise browser_unavailable("this session has no browser")
        return session.browser
