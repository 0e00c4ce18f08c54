"""The service's OpenAPI document, made to say what the service really answers.

FastAPI documents a 422 `HTTPValidationError` for every route with input and nothing else; the
service answers none of those. Here each route lists its error statuses (`errors(...)` in the
routers) with the contract's body for each (`Error` for 400/404/500, `InstanceProxyError` for the
rest), and `service_openapi` adds what holds for every route: the bearer token (401), the 400 that
replaces FastAPI's 422 wherever there is input to validate, and 500. A fuzzer (tests/test_fuzz.py)
checks every answer against this document, so a status or shape the service starts answering
without saying so is caught.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from bbrowse.wire import ERROR_SHAPE_STATUSES, Error, InstanceProxyError

#: What each error status means on this service (the contract's mapping).
STATUS_MEANINGS: dict[int, str] = {
    400: "Invalid input: `bad_request`, with a `details` entry naming each bad field",
    401: "Missing or wrong bearer token: `unauthorized`",
    403: "Not allowed: `forbidden` (e.g. as_root when the service may not switch users, or file permissions)",
    404: "No such session, process, file, replay or route: `not_found`",
    409: "`conflict`: a duplicate session name, a recording already running, a second attach",
    410: "`session_gone`: the session was deleted or timed out",
    500: "Internal error: `internal_error` (the traceback goes to the service log, never to the client)",
    502: "`browser_unavailable`: Chromium answered with an error",
    503: "`browser_unavailable`: Chromium is not installed, crashed, or is not answering",
}

SECURITY_SCHEME = "bearerAuth"


#: What FastAPI takes as `responses=`: by status, the OpenAPI response object.
OpenApiResponses = dict[int | str, dict[str, Any]]


def errors(*statuses: int) -> OpenApiResponses:
    """`responses=` for a route or router: each status with its contract body model and meaning."""
    return {
        status: {
            "model": Error if status in ERROR_SHAPE_STATUSES else InstanceProxyError,
            "description": STATUS_MEANINGS[status],
        }
        for status in statuses
    }


def _error_response(status: int) -> dict[str, Any]:
    model = Error if status in ERROR_SHAPE_STATUSES else InstanceProxyError
    return {
        "description": STATUS_MEANINGS[status],
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
    }


def _takes_input(operation: dict[str, Any]) -> bool:
    """Whether a request can fail validation: a body, or a query/header parameter (path ids are free text)."""
    if "requestBody" in operation:
        return True
    return any(p.get("in") != "path" for p in operation.get("parameters", ()))


def service_openapi(app: FastAPI) -> dict[str, Any]:
    """`app.openapi`: FastAPI's document with the service-wide errors and the bearer scheme added (cached)."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes,
    )
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for model in (Error, InstanceProxyError):
        if model.__name__ not in schemas:  # referenced by every operation below, even if no route names it
            schemas.update(_model_schemas(model))
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    components["securitySchemes"] = {
        SECURITY_SCHEME: {"type": "http", "scheme": "bearer", "description": "The service's token"},
    }
    document["security"] = [{SECURITY_SCHEME: []}]
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            if _takes_input(operation):
                responses.setdefault("400", _error_response(400))
            responses.setdefault("401", _error_response(401))
            responses.setdefault("500", _error_response(500))
    app.openapi_schema = document
    return document


def _model_schemas(model: type) -> dict[str, Any]:
    """The JSON schema of `model` (and what it refers to) as OpenAPI component schemas."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")  # type: ignore[attr-defined]
    definitions = schema.pop("$defs", {})
    return {model.__name__: schema, **definitions}
