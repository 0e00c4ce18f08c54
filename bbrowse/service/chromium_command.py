"""Which Chromium binary a session runs, and with which command line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bbrowse.service.sessions import Session

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = (
    "install Chromium (e.g. `sudo apt-get install chromium`, or Google Chrome) "
    "or point `bbrowse serve --chromium PATH` (BBROWSE_CHROMIUM) at one"
)


def find_chromium(configured: str | None) -> str | None:
    """The Chromium binary to use: the configured one if it exists, else the first known name on PATH."""
    if configured:
        found = shutil.which(configured)
        return found if found and os.access(found, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def missing_chromium_message(configured: str | None) -> str:
    """Why a session has no browser: the configured binary is missing, or none is installed."""
    if configured:
        return f"Chromium not found at {configured!r}: {INSTALL_HINT}"
    return f"Chromium is not installed on this machine: {INSTALL_HINT}"


def chromium_args(session: Session, profile_dir: Path, in_sandbox: bool = False) -> list[str]:
    """Chromium's command line for `session`: DevTools on a pipe, quiet on a closed network, its viewport.

    `in_sandbox`: it runs as root of the session's sandbox, where its own sandbox (nested namespaces) is off."""
    viewport = session.viewport
    args = [
        f"--user-data-dir={profile_dir}",
        # DevTools on fds 3 and 4 only (see cdp.PipeEnds): no TCP port anyone else could connect to.
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--disable-gpu",
        "--disable-breakpad",
        "--disable-client-side-phishing-detection",
        "--metrics-recording-only",
        # Quiet on a closed network, and less startup work: the omnibox's popups are WebUIs each made at start
        # in a renderer of its own, in a window no one sees here (the AI-mode one is also listed to every CDP
        # client as a `browser_ui` target).
        "--disable-features=Translate,MediaRouter,OptimizationHints,WebUIOmniboxPopup,WebUIOmniboxAimPopup",
        "--disable-crash-reporter",
        "--password-store=basic",
        "--use-mock-keychain",
        f"--window-size={viewport.width},{viewport.height}",
        "--window-position=0,0",
    ]
    if session.request.headless:
        args.append("--headless=new")
    else:
        args.append("--ozone-platform=x11")
    if os.geteuid() == 0 or in_sandbox:
        # --test-type drops the "unsupported command-line flag" bar, which would shrink the viewport.
        args += ["--no-sandbox", "--test-type"]
    if _small_dev_shm():
        args.append("--disable-dev-shm-usage")
    args.append("about:blank")
    return args


def _small_dev_shm() -> bool:
    try:
        return shutil.disk_usage("/dev/shm").free < 512 * 1024 * 1024
    except OSError:
        return True



#: The longest path a Unix socket may have (sun_path is 108 bytes with its NUL on Linux).
UNIX_SOCKET_PATH_MAX = 107
#: The name of each Chromium's own temporary directory (`tempfile.mkdtemp` adds 8 characters).
CHROMIUM_TMPDIR_PREFIX = "bbrowse-chromium-"
#: What goes under the temporary parent: that directory, then Chromium's singleton socket inside it.
_TMPDIR_TAIL = "/" + CHROMIUM_TMPDIR_PREFIX + "XXXXXXXX" + "/org.chromium.Chromium.XXXXXX/SingletonSocket"


def chromium_tmpdir_parent(tmpdir: str | None = None) -> str:
    """Where each Chromium's own temporary directory is made: the service's `TMPDIR`, or `/tmp` when that
    is too long for Chromium's singleton socket.

    Chromium binds `$TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket` at start and dies (FATAL
    "Socket path too long") when that path passes the Unix socket limit, so a service started under a
    deep temporary directory would have no browsers. `/tmp` is short on every system that has it.
    """
    current = (tmpdir if tmpdir is not None else os.environ.get("TMPDIR", "")).rstrip("/")
    if current and len(current) + len(_TMPDIR_TAIL) <= UNIX_SOCKET_PATH_MAX:
        return current
    return "/tmp"
