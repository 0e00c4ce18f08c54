"""HS256 tokens with an expiry, signed with a secret the service draws when it starts and never writes down.

The two kinds of `jwt` the service hands out are made here: a session's VM endpoint token (`vm_token`)
and a replay link's (`replay_view`). Each says what its claims are and words its own refusals; a
restarted service has a new secret, so the tokens of the previous one no longer verify.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

ALGORITHM = "HS256"


class TokenExpiredError(Exception):
    """The token was this signer's, and its `exp` is past."""


class TokenInvalidError(Exception):
    """The token is not one this signer made for these claims (or not a token at all)."""


class SignedTokens:
    def __init__(self, secret: bytes | None, ttl_seconds: int) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self.ttl_seconds = ttl_seconds

    def encode(self, claims: dict[str, Any], *, ttl_seconds: int | None = None, now: float | None = None) -> str:
        """`claims` with `iat` and `exp` (`ttl_seconds`, or this signer's, after `now`), signed."""
        issued = int(time.time() if now is None else now)
        expires = issued + (self.ttl_seconds if ttl_seconds is None else ttl_seconds)
        import jwt  # here, not at import: with cryptography it took ~0.1 s of the service's start

        return jwt.encode({**claims, "iat": issued, "exp": expires}, self._secret, algorithm=ALGORITHM)

    def decode(self, token: str, required: list[str], audience: str | None = None) -> dict[str, Any]:
        """The claims of a token this signer made; raises `TokenExpiredError` or `TokenInvalidError`."""
        import jwt

        try:
            claims: dict[str, Any] = jwt.decode(token, self._secret, algorithms=[ALGORITHM], audience=audience,
                                                options={"require": ["exp", *required]})
        except jwt.ExpiredSignatureError:
            raise TokenExpiredError from None
        except jwt.InvalidTokenError:
            raise TokenInvalidError from None
        return claims
