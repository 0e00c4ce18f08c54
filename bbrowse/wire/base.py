"""What every request model shares.

Request bodies are read strictly, as the cloud's (Go) service reads them: `"80"` is not a number
and `0` is not a boolean, so a client's type mistake is a 400 naming the field, not a silent guess.
"""

from pydantic import ConfigDict

STRICT = ConfigDict(strict=True)
