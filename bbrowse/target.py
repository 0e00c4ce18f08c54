"""Which service the app and the CLI talk to, and how it is described to the user.

The active profile decides (see `bbrowse.config`: `--profile`, `BBROWSE_PROFILE`, then
`KERNEL_BASE_URL` / `KERNEL_API_KEY`, then the config file's `profile`, else `embedded`): a remote
`bbrowse serve`, Kernel's cloud, or the embedded local service, reused when one runs and started
when none does. The app has its target resolved, and its sessions listed, in a thread while it loads.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from bbrowse import launcher
from bbrowse.client import ClientConfig, ClientError
from bbrowse.config import BUILTIN_PROFILES, ENVIRONMENT, Profile, load_settings

if TYPE_CHECKING:
    from bbrowse.wire import Browser

TargetKind = Literal["embedded", "remote", "cloud"]


@dataclass
class Target:
    config: ClientConfig
    kind: TargetKind
    embedded: launcher.EmbeddedService | None = None
    #: The profile this target was made from, when it came from one.
    profile: str | None = None
    #: Its sessions, listed as soon as it was known (`resolve_soon`): the sessions table's first rows, drawn
    #: with the table itself. None: not listed, or the listing failed (the table asks, and says why).
    first_listing: list[Browser] | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        if self.kind == "embedded":
            label = f"embedded · {self.config.base_url}"
        elif self.kind == "cloud":
            label = "Kernel cloud"
        else:
            label = self.config.base_url
        if self.profile and self.profile not in BUILTIN_PROFILES and self.profile != ENVIRONMENT:
            return f"{self.profile} · {label}"
        return label

    def close(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()


def target_for(profile: Profile, *, detached: bool = False,
               embedded: Future[launcher.EmbeddedService] | None = None) -> Target:
    """Connect as `profile` says: its URL and token, or the embedded service (`embedded`: the one already being
    found or started, see `launcher.find_or_start_soon`; else found or started now)."""
    if profile.kind != "embedded":
        if embedded is not None:  # started for a profile that turned out to be another: not ours to keep
            embedded.add_done_callback(_stop_unused)
        return Target(config=profile.client_config(), kind=profile.kind, profile=profile.name)
    service = embedded.result() if embedded is not None else launcher.find_or_start(detached=detached)
    return Target(config=ClientConfig(base_url=service.url, token=service.token), kind="embedded", embedded=service,
                  profile=profile.name)


def _stop_unused(started: Future[launcher.EmbeddedService]) -> None:
    if started.exception() is None:
        started.result().stop(wait=False)  # only if this process started it


def resolve_soon(profile: Profile, embedded: Future[launcher.EmbeddedService] | None = None) -> Future[Target]:
    """`target_for(profile, embedded=embedded)` in a thread of its own, then its sessions listed there
    (`Target.first_listing`): an embedded service starts, and a remote one is reached and asked, while the app
    loads."""
    pending: Future[Target] = Future()

    def resolve() -> None:
        try:
            target = target_for(profile, embedded=embedded)
        except BaseException as error:  # the app shows it, as it shows `target_for`'s own
            pending.set_exception(error)
            return
        target.first_listing = first_listing(target.config)
        pending.set_result(target)

    threading.Thread(target=resolve, name="bbrowse-target", daemon=True).start()
    return pending


def first_listing(config: ClientConfig) -> list[Browser] | None:
    """The service's sessions (active ones, as the table lists them first), or None when it could not list them."""
    from bbrowse.client import BrowserClient, close_shared_clients

    async def listed() -> list[Browser]:
        try:
            return [browser async for browser in BrowserClient(config=config).sessions.list(page_size=100)]
        finally:
            await close_shared_clients()

    try:
        return asyncio.run(listed())
    except (ClientError, OSError, ValueError):  # the table asks again, and says why
        return None


def resolve_target(*, detached: bool = False) -> Target:
    """The active profile's target (config file < environment < command line); ConfigError when unusable."""
    return target_for(load_settings().active_profile, detached=detached)
