"""Helpers shared by the app's Pilot tests: an app on a given service, and bounded waiting."""

from __future__ import annotations

from collections.abc import Callable

from bbrowse.client import ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp


def make_app(service, **options) -> BbrowseApp:
    """The real app connected to `service` (a ServiceHandle from conftest) as a remote profile."""
    return BbrowseApp(target=Target(ClientConfig(service.url, service.token), "remote"), **options)


async def wait_for(pilot, predicate: Callable[[], object], timeout: float = 15.0, what: str = "condition") -> None:
    """Let the app run until `predicate()` holds (bounded), instead of sleeping a fixed time."""
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{what} not met within {timeout} s")
