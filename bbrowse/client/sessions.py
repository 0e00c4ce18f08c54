"""Browser sessions: list (paged), create, get, delete; each Browser read fills the client's route cache."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from bbrowse.client.bodies import body, given
from bbrowse.client.decode import model, model_list
from bbrowse.client.transport import Transport, segment
from bbrowse.wire import LIST_LIMIT_DEFAULT, Browser, BrowserCreateRequest, BrowserViewport, SessionStatusFilter


@dataclass(frozen=True)
class SessionPage:
    """One page of `GET /browsers` and where the next one starts (None on the last page)."""

    items: list[Browser]
    next_offset: int | None

    @property
    def has_more(self) -> bool:
        return self.next_offset is not None


class Sessions:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    async def page(
        self,
        *,
        limit: int = LIST_LIMIT_DEFAULT,
        offset: int = 0,
        query: str | None = None,
        status: SessionStatusFilter | str | None = None,
    ) -> SessionPage:
        """One page, with the paging headers read: `X-Has-More` and `X-Next-Offset`."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if query:
            params["query"] = query
        if status:
            params["status"] = str(status)
        response = await self._t.request("GET", "/browsers", params=params, idempotent=True)
        items = model_list(Browser, response, "list sessions")
        for browser in items:
            self._t.routes.learn(browser)
        has_more = response.headers.get("x-has-more", "false").strip().lower() == "true"
        next_offset = _int_or_none(response.headers.get("x-next-offset"))
        if has_more and (next_offset is None or next_offset <= offset):
            next_offset = offset + len(items)  # "more" but no usable offset: continue after this page, never loop
        return SessionPage(items, next_offset if has_more and items else None)

    async def list(
        self,
        *,
        query: str | None = None,
        status: SessionStatusFilter | str | None = None,
        page_size: int = LIST_LIMIT_DEFAULT,
    ) -> AsyncIterator[Browser]:
        """Every matching session, fetching pages of `page_size` as the iteration goes."""
        offset: int | None = 0
        while offset is not None:
            page = await self.page(limit=page_size, offset=offset, query=query, status=status)
            for browser in page.items:
                yield browser
            offset = page.next_offset

    async def create(
        self,
        *,
        name: str | None = None,
        headless: bool | None = None,
        start_url: str | None = None,
        timeout_seconds: int | None = None,
        viewport: BrowserViewport | Mapping[str, int] | None = None,
        tags: Mapping[str, str] | None = None,
        stealth: bool | None = None,
    ) -> Browser:
        """Create a session (never re-sent: a retry could create two). Unset fields take the service's defaults."""
        if viewport is not None and not isinstance(viewport, BrowserViewport):
            viewport = given(BrowserViewport, **viewport)
        request = given(
            BrowserCreateRequest,
            name=name, headless=headless, start_url=start_url, timeout_seconds=timeout_seconds, viewport=viewport,
            tags=dict(tags) if tags is not None else None, stealth=stealth,
        )
        response = await self._t.request("POST", "/browsers", json=body(request), idempotent=False)
        return self._learned(model(Browser, response, "create session"))

    async def get(self, id_or_name: str) -> Browser:
        response = await self._t.request("GET", f"/browsers/{segment(id_or_name)}", idempotent=True)
        return self._learned(model(Browser, response, "get session"))

    async def delete(self, id_or_name: str) -> None:
        """Delete the session: ends its processes, recordings and browser (204)."""
        await self._t.request("DELETE", f"/browsers/{segment(id_or_name)}", idempotent=True, ok=(200, 204))
        self._t.routes.forget(id_or_name)

    def _learned(self, browser: Browser) -> Browser:
        """Every Browser object read teaches the client where that session's VM answers (`routing.py`)."""
        self._t.routes.learn(browser)
        return browser


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
