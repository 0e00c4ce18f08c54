"""The base of a session screen's panes: which session they show, its client, and where the keyboard goes."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from rich.cells import cell_len
from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Static

from bbrowse.client import BrowserClient, ClientError
from bbrowse.tui.app_services import services
from bbrowse.tui.key_hints import hint_text
from bbrowse.tui.textual_private import keymap_of


class SessionPane(Vertical):
    """A tab of the session screen (shells, logs, files, screenshot, replays, events), made for one session.

    Workers report, handlers draw (docs/architecture.md): its messages are handled only while it is mounted
    (its loop ends before its children go), so a late reply is never drawn; `answer` wraps a call that may fail:

        @dataclass
        class InfoFetched(Message):           # Textual's messages may be dataclasses
            path: str
            info: FileInfo | ClientError
        @work(exclusive=True, group="info")
        async def _fetch_info(self, path: str) -> None:
            self.post_message(InfoFetched(path, await answer(self.client.fs.file_info(self.session_id, path))))
        @on(InfoFetched)
        def _info_fetched(self, message: InfoFetched) -> None: ...   # draws the info, or the error
    """

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    @property
    def client(self) -> BrowserClient:
        """The client of the service the session lives on (the app's, through `AppServices`)."""
        return services(self).connected_client()

    def focus_default(self) -> None:
        """Give the keyboard to the pane's main widget: the session screen calls it when the tab is shown
        and nothing in it had the focus before."""
        raise NotImplementedError(f"{type(self).__name__} says which of its widgets takes the keyboard")


T = TypeVar("T")


async def answer(call: Awaitable[T]) -> T | ClientError:
    """What a client call returned, or the `ClientError` it raised: one value for a worker to post, so the
    handler draws the result and the failure alike (see `SessionPane`)."""
    try:
        return await call
    except ClientError as error:
        return error


#: Between the items of a hint line.
HINT_SEPARATOR = " · "
#: What ends a hint line whose items do not all fit.
HINT_MORE = "? all keys"


def fit_hint(hint: str, width: int) -> str:
    """`hint` ("a open · b close · …") cut to whole items that fit `width` cells, ending in "· ? all keys"
    when some are left out: never cut in the middle of an item."""
    if cell_len(hint) <= width:
        return hint
    items = hint.split(HINT_SEPARATOR)
    shown: list[str] = []
    for item in items:
        candidate = HINT_SEPARATOR.join([*shown, item, HINT_MORE])
        if cell_len(candidate) > width:
            break
        shown.append(item)
    return HINT_SEPARATOR.join([*shown, HINT_MORE]) if shown else hint[: max(0, width - 1)] + "…"


class HintLine(Static):
    """A pane's one-line list of keys, fitted to its width by whole items (`fit_hint`). `hint` names keys by
    binding id (`{logs.open} open`, see `key_hints`), so a key remapped in the configuration shows as remapped."""

    def __init__(self, hint: str, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self.hint = hint

    def update_hint(self, hint: str) -> None:
        self.hint = hint
        self.refresh()

    def render(self) -> Text:
        hint = hint_text(self.hint, keymap_of(self.app))
        return Text(fit_hint(hint, self.content_region.width or 10_000), no_wrap=True)
