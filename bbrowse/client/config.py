"""Where the client connects and with which token.

Explicit arguments win over the environment (`KERNEL_BASE_URL`, `KERNEL_API_KEY`, the two names the
official Kernel SDK reads too), so a script that works with the SDK works with bbrowse unchanged.
The app and CLI build a `ClientConfig` from their own sources (config files, the embedded service)
and pass it in; nothing here reads files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from bbrowse.client.errors import ConfigError
from bbrowse.client.retry import RetryPolicy
from bbrowse.hosts import is_loopback

ENV_TOKEN = "KERNEL_API_KEY"
ENV_BASE_URL = "KERNEL_BASE_URL"
#: Kernel's production API, the official SDK's default too.
DEFAULT_BASE_URL = "https://api.onkernel.com"


@dataclass(frozen=True)
class ClientConfig:
    """Everything a `BrowserClient` needs; immutable so it can key the shared connection pools."""

    base_url: str
    token: str = field(repr=False)
    #: Seconds to establish a TCP (and TLS) connection.
    connect_timeout: float = 5.0
    #: Seconds to wait for a non-streaming response; streams have no read timeout.
    timeout: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", normalize_base_url(self.base_url))
        if not self.token:
            raise ConfigError(f"no API token: pass token= or set {ENV_TOKEN}")

    @classmethod
    def resolve(
        cls,
        base_url: str | None = None,
        token: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **options: object,
    ) -> ClientConfig:
        """Explicit arguments first, then `KERNEL_BASE_URL` / `KERNEL_API_KEY`, then Kernel's production URL."""
        env = os.environ if env is None else env
        resolved_url = base_url or env.get(ENV_BASE_URL) or DEFAULT_BASE_URL
        resolved_token = token or env.get(ENV_TOKEN) or ""
        return cls(base_url=resolved_url, token=resolved_token, **options)  # type: ignore[arg-type]

    @property
    def is_loopback(self) -> bool:
        """True for a service on this machine: no proxy from the environment applies to it."""
        return is_loopback((urlsplit(self.base_url).hostname or "").strip("[]"))

    @property
    def websocket_base_url(self) -> str:
        """The same base URL with `ws://` / `wss://`, for the attach route."""
        if self.base_url.startswith("https://"):
            return "wss://" + self.base_url[len("https://"):]
        return "ws://" + self.base_url[len("http://"):]


def normalize_base_url(url: str) -> str:
    """`http(s)://host[:port][/prefix]` without a trailing slash; anything else is a clear ConfigError."""
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"base URL must look like http://host:port or https://host, got {url!r}")
    if parts.query or parts.fragment:
        raise ConfigError(f"base URL must not carry a query or fragment, got {url!r}")
    return url.rstrip("/")
