"""Browser sessions: the create request, the Browser object and the list filter."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from bbrowse.wire.base import STRICT, WireModel
from bbrowse.wire.telemetry import TelemetryConfig, TelemetryRequest


class BrowserViewport(WireModel):
    model_config = STRICT

    width: int = Field(ge=1, le=7680)
    height: int = Field(ge=1, le=4320)
    refresh_rate: int | None = Field(default=None, ge=1, le=240)


class BrowserCreateRequest(WireModel):
    """`POST /browsers`: every field is optional; unknown fields are ignored as the cloud does."""

    model_config = STRICT

    name: str | None = Field(default=None, min_length=1, max_length=255)
    headless: bool = True
    start_url: str | None = None
    timeout_seconds: int = Field(default=60, ge=10, le=259200)
    viewport: BrowserViewport | None = None
    tags: dict[str, str] | None = None
    stealth: bool = False
    telemetry: TelemetryRequest | None = None
    #: bbrowse extension: the session's sandbox has a network of its own with only loopback (`bbrowse serve`
    #: sandboxes sessions; Kernel's cloud has no such switch, and ignores the field).
    offline: bool = False


class Browser(WireModel):
    """What `GET /browsers` items and `POST /browsers` carry."""

    session_id: str
    cdp_ws_url: str
    created_at: datetime
    headless: bool
    stealth: bool
    timeout_seconds: int
    name: str | None = None
    start_url: str | None = None
    viewport: BrowserViewport | None = None
    tags: dict[str, str] | None = None
    browser_live_view_url: str | None = None
    deleted_at: datetime | None = None
    base_url: str | None = None
    telemetry: TelemetryConfig | None = None


class SessionStatusFilter(StrEnum):
    ACTIVE = "active"
    DELETED = "deleted"
    ALL = "all"


#: Paging bounds of `GET /browsers`.
LIST_LIMIT_DEFAULT = 20
LIST_LIMIT_MAX = 100
