"""Processes: spawn, exec, stdin, status, kill, resize, the stdout SSE events and attach frames."""

from __future__ import annotations

import binascii
from datetime import datetime
from typing import Annotated, Any, Literal

import pybase64
from pydantic import ConfigDict, Field, field_validator

from bbrowse.wire.base import STRICT, WireModel

AbsolutePath = Annotated[str, Field(pattern=r"^/.*")]
TermSize = Annotated[int, Field(ge=1, le=65535)]


def decode_b64(value: str) -> bytes:
    """Strict standard-alphabet, padded base64; raises ValueError with a readable reason.

    pybase64 (SIMD) with validation is several times faster than the standard library here, and
    process output is decoded on the hot path of every stream.
    """
    try:
        return pybase64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not valid base64 ({exc})") from None


def encode_b64(data: bytes) -> str:
    return pybase64.b64encode(data).decode("ascii")


#: Standard-alphabet, padded base64 (documents `data_b64`; `decode_b64` is what enforces it).
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


class ExecRequest(WireModel):
    """Fields shared by spawn and exec."""

    model_config = STRICT

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    as_root: bool = False
    as_user: str | None = Field(default=None, min_length=1)
    cwd: AbsolutePath | None = None
    env: dict[str, str] = Field(default_factory=dict)
    #: Seconds; 0 or absent: none (as Kernel's VM reads it).
    timeout_sec: int | None = Field(default=None, ge=0)


class SpawnRequest(ExecRequest):
    allocate_tty: bool = False
    cols: TermSize = 80
    rows: TermSize = 24


class SpawnResult(WireModel):
    process_id: str
    pid: int
    started_at: datetime


class ExecResult(WireModel):
    exit_code: int
    stdout_b64: str
    stderr_b64: str
    duration_ms: int


class StdinRequest(WireModel):
    """No other properties are allowed (spec)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    data_b64: str = Field(json_schema_extra={"format": "byte", "pattern": BASE64_PATTERN})

    @field_validator("data_b64")
    @classmethod
    def _valid_base64(cls, value: str) -> str:
        decode_b64(value)
        return value

    def data(self) -> bytes:
        return decode_b64(self.data_b64)


class StdinResult(WireModel):
    model_config = ConfigDict(extra="forbid")

    written_bytes: int


ProcessState = Literal["running", "exited"]


class ProcessStatus(WireModel):
    state: ProcessState
    exit_code: int | None = None
    cpu_pct: float = 0.0
    mem_bytes: int | None = None


Signal = Literal["TERM", "KILL", "INT", "HUP"]


class KillRequest(WireModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    signal: Signal


class ResizeRequest(WireModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    rows: TermSize
    cols: TermSize


class OkResponse(WireModel):
    ok: bool = True


class ProcessOutputEvent(WireModel):
    """One chunk on `stdout/stream`."""

    stream: Literal["stdout", "stderr"]
    data_b64: str

    def data(self) -> bytes:
        return decode_b64(self.data_b64)


class ProcessExitEvent(WireModel):
    """The last event on `stdout/stream`."""

    event: Literal["exit"] = "exit"
    exit_code: int


StdoutStreamEvent = ProcessOutputEvent | ProcessExitEvent


def parse_stdout_event(payload: dict[str, Any]) -> StdoutStreamEvent:
    if payload.get("event") == "exit":
        return ProcessExitEvent.model_validate(payload)
    return ProcessOutputEvent.model_validate(payload)


class AttachResize(WireModel):
    """Text frame a client sends on `attach` to resize the PTY."""

    model_config = STRICT

    type: Literal["resize"] = "resize"
    rows: TermSize
    cols: TermSize


class AttachExit(WireModel):
    """Final text frame the service sends on `attach` (note the camelCase field, as the cloud sends it)."""

    type: Literal["exit"] = "exit"
    exitCode: int  # noqa: N815 - exact wire name
