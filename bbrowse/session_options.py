"""What a new session may be given, checked the same way by the app's form and `bbrowse new`.

The default inactivity timeout is 300 s for both. The service's own default (60 s, as Kernel's) suits a
program that keeps its session busy; a person is not one: reading a page, a man page or a colleague's
message for a minute ended the session under them. Five minutes keeps a session through such pauses, and
one that is forgotten still goes within minutes.
"""

from __future__ import annotations

from urllib.parse import urlsplit

DEFAULT_TIMEOUT = 300
MIN_TIMEOUT, MAX_TIMEOUT = 10, 259_200
#: Schemes that need a host after them (`https://host/...`); the others stand alone (`about:blank`).
HOST_SCHEMES = frozenset({"http", "https", "ftp", "ws", "wss"})
OPAQUE_SCHEMES = frozenset({"about", "data", "file", "chrome", "view-source", "blob", "javascript"})


def check_timeout(text: str) -> tuple[int | None, str | None]:
    """(seconds, None) or (None, the problem in a sentence)."""
    text = text.strip()
    if not text:
        return None, f"Inactivity timeout is required: a number of seconds, {MIN_TIMEOUT}–{MAX_TIMEOUT:,}."
    try:
        seconds = int(text)
    except ValueError:
        return None, "Inactivity timeout must be a whole number of seconds."
    if not MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
        return None, f"Inactivity timeout must be between {MIN_TIMEOUT} and {MAX_TIMEOUT:,} seconds."
    return seconds, None


def check_start_url(text: str) -> tuple[str | None, str | None]:
    """(url or None when empty, None) or (None, the problem in a sentence)."""
    text = text.strip()
    if not text:
        return None, None
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme in HOST_SCHEMES and parts.netloc and " " not in parts.netloc:
        return text, None
    if scheme in OPAQUE_SCHEMES and len(text) > len(scheme) + 1:
        return text, None
    if not scheme and "." in text and " " not in text:
        return None, f"Start URL needs its scheme: https://{text}"
    return None, "Start URL must be a URL, e.g. https://example.com or about:blank."


__all__ = ["DEFAULT_TIMEOUT", "MAX_TIMEOUT", "MIN_TIMEOUT", "check_start_url", "check_timeout"]
