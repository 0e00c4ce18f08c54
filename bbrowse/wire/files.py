"""Filesystem, logs, screenshots and replays."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field

from bbrowse.wire.base import STRICT, WireModel


class FileInfo(WireModel):
    name: str
    path: str
    size_bytes: int
    is_dir: bool
    mod_time: datetime
    mode: str  # like "-rw-r--r--"


class LogSource(StrEnum):
    PATH = "path"
    SUPERVISOR = "supervisor"


#: The one event Kernel's VM sends on `logs/stream` for a source it cannot stream (`source=supervisor`,
#: or no absolute `path`), before it ends the stream; `bbrowse serve --kernel-compat` sends the same.
LOGS_SOURCE_NOT_AVAILABLE = "logs source not available"


class LogEvent(WireModel):
    event: Literal["log"] = "log"
    message: str
    timestamp: datetime


class ScreenshotRegion(WireModel):
    model_config = STRICT

    x: int = Field(ge=0)
    y: int = Field(ge=0)
    width: int = Field(ge=1)
    height: int = Field(ge=1)


class ScreenshotRequest(WireModel):
    model_config = STRICT

    region: ScreenshotRegion | None = None


class ReplayStartRequest(WireModel):
    model_config = STRICT

    framerate: int | None = Field(default=None, ge=1, le=60)
    max_duration_in_seconds: int | None = Field(default=None, ge=1)


class Replay(WireModel):
    replay_id: str
    started_at: datetime | None = None
    finished_at: datetime | None = None
    replay_view_url: str | None = None
