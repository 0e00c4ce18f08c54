"""Telemetry: what a session records about its browser (console, network, page, control, connection, system).

The shapes are Kernel's (SDK 0.131.0, `kernel.types.browsers.*telemetry*`, `browser_*_event.py`): the
`telemetry` settings of create and `PATCH /browsers/{id}`, the active config a Browser carries, and the
envelope `{seq, event}` that `telemetry/events` pages through and `telemetry/stream` sends as SSE.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from bbrowse.wire.base import STRICT, WireModel

#: Every category Kernel names, in its order.
CATEGORIES: tuple[str, ...] = (
    "console", "network", "page", "interaction", "control", "platform", "connection", "system", "screenshot",
    "captcha", "monitor",
)
#: Captured whenever telemetry is on, unless turned off (the operational signals).
DEFAULT_ON: frozenset[str] = frozenset({"control", "connection", "system", "captcha"})
#: Categories a client may configure (`monitor` follows the CDP categories by itself).
CONFIGURABLE: tuple[str, ...] = tuple(c for c in CATEGORIES if c != "monitor")
#: The categories fed by the browser's own DevTools events.
CDP_CATEGORIES: frozenset[str] = frozenset({"console", "network", "page", "interaction"})
#: The header values telemetry never shows.
MASKED_HEADERS: frozenset[str] = frozenset({"authorization", "cookie", "set-cookie", "proxy-authorization"})
MASK = "[masked]"

#: Paging bounds of `GET /browsers/{id}/telemetry/events`.
EVENTS_LIMIT_DEFAULT = 20
EVENTS_LIMIT_MAX = 1000


class TelemetryCategoryConfig(WireModel):
    model_config = STRICT

    enabled: bool | None = None


class TelemetryCdpControlConfig(WireModel):
    model_config = STRICT

    excluded_methods: list[str] | None = None


class TelemetryControlConfig(WireModel):
    model_config = STRICT

    enabled: bool | None = None
    cdp: TelemetryCdpControlConfig | None = None


class TelemetryCategoriesConfig(WireModel):
    """Per-category flags layered onto the default set (`DEFAULT_ON`)."""

    model_config = STRICT

    console: TelemetryCategoryConfig | None = None
    network: TelemetryCategoryConfig | None = None
    page: TelemetryCategoryConfig | None = None
    interaction: TelemetryCategoryConfig | None = None
    control: TelemetryControlConfig | None = None
    platform: TelemetryCategoryConfig | None = None
    connection: TelemetryCategoryConfig | None = None
    system: TelemetryCategoryConfig | None = None
    screenshot: TelemetryCategoryConfig | None = None
    captcha: TelemetryCategoryConfig | None = None

    def flags(self) -> dict[str, bool]:
        """The categories this config sets explicitly, and to what."""
        out: dict[str, bool] = {}
        for name in CONFIGURABLE:
            entry = getattr(self, name)
            if entry is not None and entry.enabled is not None:
                out[name] = entry.enabled
        return out


class TelemetryStorageConfig(WireModel):
    model_config = STRICT

    enabled: bool | None = None


class TelemetryRequest(WireModel):
    """The `telemetry` field of create and update (`enabled` is a shortcut; `browser` sets categories)."""

    model_config = STRICT

    enabled: bool | None = None
    browser: TelemetryCategoriesConfig | None = None
    export: dict[str, Any] | None = None
    storage: TelemetryStorageConfig | None = None


class TelemetryConfig(WireModel):
    """The active telemetry of a session, as a Browser carries it."""

    browser: TelemetryCategoriesConfig | None = None
    storage: TelemetryStorageConfig | None = None


class BrowserUpdateRequest(WireModel):
    """`PATCH /browsers/{id}`: bbrowse serve applies `telemetry`; other fields are accepted and ignored."""

    model_config = STRICT

    telemetry: TelemetryRequest | None = None


class TelemetryRequestError(ValueError):
    """A telemetry request that contradicts itself; `field` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _check(request: TelemetryRequest) -> dict[str, bool]:
    flags = request.browser.flags() if request.browser is not None else {}
    if request.enabled is False and flags:
        raise TelemetryRequestError("telemetry.enabled", "enabled=false cannot be combined with browser categories")
    return flags


def resolve_on_create(request: TelemetryRequest | None) -> frozenset[str]:
    """The categories a create captures (empty: no capture)."""
    if request is None:
        return frozenset()
    flags = _check(request)
    if request.enabled is not True and not flags:
        return frozenset()
    return _layer(DEFAULT_ON, flags)


def resolve_on_update(request: TelemetryRequest | None, current: frozenset[str]) -> frozenset[str]:
    """The categories after an update of a session capturing `current` (empty: capture stops)."""
    if request is None:
        return current
    flags = _check(request)
    if request.enabled is False:
        return frozenset()
    if request.enabled is True:
        return _layer(DEFAULT_ON, flags)
    if not flags:
        return current
    return _layer(current or DEFAULT_ON, flags)


def _layer(base: frozenset[str], flags: dict[str, bool]) -> frozenset[str]:
    on = set(base)
    for name, enabled in flags.items():
        (on.add if enabled else on.discard)(name)
    if on & CDP_CATEGORIES:
        on.add("monitor")
    return frozenset(on)


def request_for(categories: frozenset[str]) -> TelemetryRequest | None:
    """A create request that resolves to `categories` again (what a session record keeps)."""
    if not categories:
        return None
    return TelemetryRequest(enabled=True, browser=config_for(categories).browser)


def config_for(categories: frozenset[str]) -> TelemetryConfig:
    fields: dict[str, Any] = {}
    for name in CONFIGURABLE:
        enabled = name in categories
        fields[name] = TelemetryControlConfig(enabled=enabled) if name == "control" else \
            TelemetryCategoryConfig(enabled=enabled)
    return TelemetryConfig(browser=TelemetryCategoriesConfig(**fields),
                           storage=TelemetryStorageConfig(enabled=True))


class TelemetryEventSource(WireModel):
    kind: Literal["cdp", "kernel_api", "extension", "local_process"]
    event: str | None = None
    metadata: dict[str, str] | None = None


class TelemetryEvent(WireModel):
    """One event: `category` and `type` name it, `ts` is Unix microseconds, `data` its type's fields."""

    category: str
    type: str
    ts: int
    source: TelemetryEventSource
    data: dict[str, Any] | None = None
    truncated: bool | None = None


class TelemetryEnvelope(WireModel):
    """What `telemetry/events` lists and each `telemetry/stream` frame carries; `seq` is also the SSE `id:`."""

    seq: int
    event: TelemetryEvent


DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration_seconds(text: str) -> float | None:
    """`5m` -> 300.0; None when `text` is not a duration."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text.strip())
    if match is None:
        return None
    return float(match.group(1)) * DURATION_UNITS[match.group(2)]


__all__ = [
    "CATEGORIES", "CDP_CATEGORIES", "CONFIGURABLE", "DEFAULT_ON", "EVENTS_LIMIT_DEFAULT", "EVENTS_LIMIT_MAX",
    "MASK", "MASKED_HEADERS", "BrowserUpdateRequest", "TelemetryCategoriesConfig", "TelemetryConfig",
    "TelemetryEnvelope", "TelemetryEvent", "TelemetryEventSource", "TelemetryRequest", "TelemetryRequestError",
    "config_for", "duration_seconds", "request_for", "resolve_on_create", "resolve_on_update",
]
