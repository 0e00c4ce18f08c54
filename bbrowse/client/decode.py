"""Turning response bodies into wire models, with a `ProtocolError` (never a pydantic traceback) when
the service answers a shape the contract does not allow."""

from __future__ import annotations

import json
from typing import TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from bbrowse.client.errors import ProtocolError, snippet

M = TypeVar("M", bound=BaseModel)


def json_body(response: httpx.Response, what: str) -> object:
    try:
        return json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError(f"{what}: response is not JSON: {snippet(response.content)!r}") from None


def validate(cls: type[M], data: object, what: str) -> M:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:3])
        raise ProtocolError(f"{what}: unexpected {cls.__name__} shape ({problems})") from None


def model(cls: type[M], response: httpx.Response, what: str) -> M:
    return validate(cls, json_body(response, what), what)


def model_list(cls: type[M], response: httpx.Response, what: str) -> list[M]:
    data = json_body(response, what)
    if not isinstance(data, list):
        raise ProtocolError(f"{what}: expected a JSON array, got {type(data).__name__}")
    return [validate(cls, item, what) for item in data]
