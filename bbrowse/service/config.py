"""How one `bbrowse serve` is configured: where it listens, its token, where it keeps state."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bbrowse.limits import RetentionLimits

if TYPE_CHECKING:
    from bbrowse.service.sandbox import SandboxSupport


@dataclass
class ServiceConfig:
    token: str
    state_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    #: Chromium binary to use; None means look for `chromium`, `chromium-browser`, `google-chrome`.
    chromium_path: str | None = None
    #: The URL clients reach this service at (set once the port is bound).
    public_url: str = ""
    #: How long a `replay_view_url` stays valid (env `BBROWSE_REPLAY_LINK_SECONDS`; a day by default).
    replay_link_seconds: int = 24 * 3600
    #: How long the session `jwt` in a Browser object's `cdp_ws_url` is valid (env `BBROWSE_VM_TOKEN_SECONDS`;
    #: a day by default). Every read of the Browser object hands out a fresh one.
    vm_token_seconds: int = 24 * 3600
    #: `--kernel-compat`: behave as Kernel's in-VM server does where a client has to cope (PTY output only
    #: over attach, read only while attached, one attach, 10 s retention, -1 after a signal, `{"message"}`
    #: errors under `/vm/`, no supervisor log source). The README lists the differences point by point.
    kernel_compat: bool = False
    #: How long ended sessions' files are kept, how large the state dir may grow (`--keep-for`, `--max-state-size`).
    retention: RetentionLimits = field(default_factory=RetentionLimits)
    #: `--no-sandbox` (env `BBROWSE_NO_SANDBOX=1`): sessions run on the host, as the service's user.
    no_sandbox: bool = False
    #: What `sandbox.probe` found at start (None: not probed yet; `build_state` does it).
    sandbox: SandboxSupport | None = None
    extra: dict = field(default_factory=dict)

    @property
    def sessions_dir(self) -> Path:
        return self.state_dir / "sessions"

    @property
    def service_log(self) -> Path:
        return self.state_dir / "logs" / "bbrowse.log"
