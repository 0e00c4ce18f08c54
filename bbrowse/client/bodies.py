"""Request bodies made from the wire models the service validates them with.

Call sites build a body as `body(SomeRequest.model_construct(field=value, ...))`: the field names are
the model's (mypy checks them), and the JSON is the model's serialisation. A body carries only the
fields given, less the None ones, so the service's defaults apply to the rest. It is not validated
here: refusing bad input is the service's, as a 400 naming the field (what the client's callers see).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def given(model: type[M], **values: Any) -> M:
    """`model` with the `values` that are not None: for fields where None means "not given" though the
    model's field is not optional (the service's default then applies). A name the model lacks is an error."""
    unknown = values.keys() - model.model_fields.keys()
    if unknown:
        raise TypeError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    return model.model_construct(**{name: value for name, value in values.items() if value is not None})


def body(request: BaseModel) -> dict[str, Any]:
    """The JSON object for `request`: the fields it was given that are not None."""
    return request.model_dump(mode="json", exclude_unset=True, exclude_none=True, warnings=False)
