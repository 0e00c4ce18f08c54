"""`--kernel-compat`: unknown JSON body fields are dropped before validation, as Go's `encoding/json` ignores them.

Kernel's VM decodes request bodies with Go's decoder, which skips fields its struct does not have; the
default service refuses them (400 naming the field). In compat this middleware reads a JSON body, drops
every key the route's body model (and the models nested in it) does not name, and hands the rest on.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

from pydantic import BaseModel
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_METHODS = {"POST", "PUT", "PATCH"}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation names (through Optional, unions, lists and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is None:
        return []
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        args = args[:1]
    elif origin not in (list, tuple, typing.Union, types.UnionType):
        return []
    return [model for arg in args for model in _models_in(arg)]


def _known(model: type[BaseModel]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        fields[name] = info.annotation
        if info.alias:
            fields[info.alias] = info.annotation
    return fields


def strip_unknown(models: list[type[BaseModel]], value: Any) -> Any:
    """`value` without the keys none of `models` knows, recursively (a union keeps what any member knows)."""
    if isinstance(value, list):
        return [strip_unknown(models, item) for item in value]
    if not isinstance(value, dict) or not models:
        return value
    known: dict[str, list[type[BaseModel]]] = {}
    for model in models:
        for key, annotation in _known(model).items():
            known.setdefault(key, []).extend(_models_in(annotation))
    return {key: strip_unknown(known[key], item) for key, item in value.items() if key in known}


class UnknownFieldsIgnored:
    def __init__(self, app: ASGIApp, routes: typing.Callable[[], typing.Iterable[Any]]) -> None:
        self.app = app
        self._routes = routes

    def _body_models(self, scope: Scope) -> list[type[BaseModel]]:
        for route in self._routes():
            body_field = getattr(route, "body_field", None)
            if body_field is not None and route.matches(scope)[0] is Match.FULL:
                return _models_in(body_field.field_info.annotation)
        return []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _METHODS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if not headers.get(b"content-type", b"").startswith(b"application/json"):
            await self.app(scope, receive, send)
            return
        models = self._body_models(scope)
        if not models:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nothing to hand on
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            body = json.dumps(strip_unknown(models, json.loads(body))).encode()
        except ValueError:
            pass  # not JSON: the route's own validation says so
        scope = dict(scope)
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"content-length"] + [
            (b"content-length", str(len(body)).encode())
        ]
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if not handed:
                handed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
