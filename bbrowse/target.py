"""Which service the app and the CLI talk to, and how it is described to the user.

Order: `KERNEL_BASE_URL` / `KERNEL_API_KEY` in the environment (a remote `bbrowse serve` or Kernel's
cloud), otherwise the embedded local service, reused when one runs and started when none does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from bbrowse import launcher
from bbrowse.client import DEFAULT_BASE_URL, ENV_BASE_URL, ENV_TOKEN, ClientConfig

TargetKind = Literal["embedded", "remote", "cloud"]


@dataclass
class Target:
    config: ClientConfig
    kind: TargetKind
    embedded: launcher.EmbeddedService | None = None

    @property
    def label(self) -> str:
        if self.kind == "embedded":
            return f"embedded · {self.config.base_url}"
        if self.kind == "cloud":
            return "Kernel cloud"
        return self.config.base_url

    def close(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()


def remote_configured() -> bool:
    return bool(os.environ.get(ENV_BASE_URL) or os.environ.get(ENV_TOKEN))


def resolve_target(*, detached: bool = False) -> Target:
    """Connect where the environment says, or to the embedded service (starting it if needed)."""
    if remote_configured():
        config = ClientConfig.resolve()
        kind: TargetKind = "cloud" if config.base_url == DEFAULT_BASE_URL else "remote"
        return Target(config=config, kind=kind)
    service = launcher.find_or_start(detached=detached)
    return Target(config=ClientConfig(base_url=service.url, token=service.token), kind="embedded", embedded=service)
