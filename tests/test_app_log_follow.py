"""Follow mode keeps the newest line in view, also when a horizontal scrollbar appears under it."""

from __future__ import annotations

from app_support import wait_for
from textual.app import App, ComposeResult

from bbrowse.tui.widgets.log_view import LogPanel, LogStatus, LogView


class OnePanel(App):
    def compose(self) -> ComposeResult:
        yield LogPanel("app", "app", capacity=1000)


def visible_rows(view: LogView) -> list[str]:
    return ["".join(segment.text for segment in view.render_line(y)).rstrip()
            for y in range(view.scrollable_content_region.height)]


async def test_following_shows_the_last_line_with_a_horizontal_scrollbar_after_wrap_twice() -> None:
    app = OnePanel()
    async with app.run_test(size=(80, 20)) as pilot:
        panel = app.query_one(LogPanel)
        view = panel.view
        view.focus()
        view.append_lines([f"line {i}" for i in range(100)] + ["last " + "x" * 300])
        await pilot.pause()
        await pilot.press("w", "w")  # wrap on, wrap off: the long line brings the horizontal scrollbar back
        await wait_for(pilot, lambda: view.show_horizontal_scrollbar, what="horizontal scrollbar")
        await pilot.pause()
        assert view.following and "following" in panel.query_one(LogStatus).text
        assert any(row.startswith("last xxx") for row in visible_rows(view)), visible_rows(view)[-3:]
        assert view.scroll_offset.y == view.max_scroll_y
        # and it stays so as lines keep coming
        view.append_lines(["newest " + "y" * 200])
        await pilot.pause()
        assert visible_rows(view)[-1].startswith("newest yyy"), visible_rows(view)[-3:]
