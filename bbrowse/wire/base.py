"""What every request model shares.

Request bodies are read strictly, as the cloud's (Go) service reads them: `"80"` is not a number
and `0` is not a boolean, so a client's type mistake is a 400 naming the field, not a silent guess.
"""

from pydantic import BaseModel, ConfigDict

STRICT = ConfigDict(strict=True)


class WireModel(BaseModel):
    """The base of every wire model. Its validator is built on first use, not at import: the app and the
    service each import every model and use few of them at start-up (building them all took ~0.5 s)."""

    model_config = ConfigDict(defer_build=True)
