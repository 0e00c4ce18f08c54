"""Which service the app and the CLI talk to, and how it is described to the user.

The active profile decides (see `bbrowse.config`: `--profile`, `BBROWSE_PROFILE`, then
`KERNEL_BASE_URL` / `KERNEL_API_KEY`, then the config file's `profile`, else `embedded`): a remote
`bbrowse serve`, Kernel's cloud, or the embedded local service, reused when one runs and started
when none does.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from bbrowse import launcher
from bbrowse.client import ClientConfig
from bbrowse.config import BUILTIN_PROFILES, ENVIRONMENT, Profile, load_settings

TargetKind = Literal["embedded", "remote", "cloud"]


@dataclass
class Target:
    config: ClientConfig
    kind: TargetKind
    embedded: launcher.EmbeddedService | None = None
    #: The profile this target was made from, when it came from one.
    profile: str | None = None

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
    """`target_for(profile, embedded=embedded)` in a thread of its own: an embedded service starts while the app
    loads."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bbrowse-target")
    pending = pool.submit(target_for, profile, embedded=embedded)
    pool.shutdown(wait=False)
    return pending


def resolve_target(*, detached: bool = False) -> Target:
    """The active profile's target (config file < environment < command line); ConfigError when unusable."""
    return target_for(load_settings().active_profile, detached=detached)
