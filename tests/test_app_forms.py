"""Forms check what they send: a cleared timeout is an error (not the service's silent 60 s under a form
that showed 300), a start URL must be a URL, a cleared history length is an error; against a real service."""

from __future__ import annotations

import uuid

import httpx
from app_support import make_app, screen_shown, type_text, wait_for

from bbrowse.tui.screens.create_session import CreateSessionScreen
from bbrowse.tui.screens.sessions import SessionsScreen


async def names_on_service(http: httpx.AsyncClient) -> set[str]:
    return {b.get("name") for b in (await http.get("/browsers")).json()}


async def test_the_new_session_form_refuses_a_cleared_timeout_and_a_start_url_that_is_not_a_url(
    browserless_service, browserless_http: httpx.AsyncClient
) -> None:
    """On the service with no Chromium: the subject is the form and what it sends (the session it creates
    starts at once)."""
    service, http = browserless_service, browserless_http
    name = f"form-{uuid.uuid4().hex[:6]}"
    app = make_app(service)
    async with app.run_test(size=(120, 34)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: screen_shown(app, CreateSessionScreen))
        form = app.screen
        error = lambda: str(form.query_one("#create-error").render())  # noqa: E731
        await wait_for(pilot, lambda: form.query_one("#name").has_focus, what="name field")
        await type_text(pilot, name)
        form.query_one("#timeout").focus()
        await pilot.press("end", "backspace", "backspace", "backspace")  # the 300 is gone
        assert form.query_one("#timeout").value == ""
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "timeout is required" in error())
        assert form.query_one("#timeout").has_focus and isinstance(app.screen, CreateSessionScreen)

        await pilot.press(*"45")
        form.query_one("#start-url").focus()
        await wait_for(pilot, lambda: form.query_one("#start-url").has_focus, what="start URL field")
        await type_text(pilot, "not a url")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "must be a URL" in error())
        assert form.query_one("#start-url").has_focus
        assert name not in await names_on_service(http)  # nothing was sent

        form.query_one("#start-url").value = "about:blank"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen), timeout=30)
    created = next(b for b in (await http.get("/browsers")).json() if b.get("name") == name)
    assert created["timeout_seconds"] == 45  # what the form showed, not a default
    await http.delete(f"/browsers/{created['session_id']}")


def test_the_checks_say_what_is_wrong() -> None:
    from bbrowse.tui.screens.create_session import check_start_url, check_timeout

    assert check_timeout("") == (None, "Inactivity timeout is required: a number of seconds, 10–259,200.")
    assert check_timeout("9")[1] and check_timeout("259201")[1] and check_timeout("1.5")[1]
    assert check_timeout(" 600 ") == (600, None)
    assert check_start_url("") == (None, None)
    assert check_start_url("example.com") == (None, "Start URL needs its scheme: https://example.com")
    assert check_start_url("not a url")[1] and check_start_url("http://")[1] and check_start_url("https:/x")[1]
    for good in ("https://example.com/a?b=c", "http://127.0.0.1:8080", "about:blank", "data:text/html,<h1>x</h1>"):
        assert check_start_url(good) == (good, None)


async def test_the_open_log_form_refuses_a_cleared_history_length(
    browserless_service, browserless_module_session_id: str
) -> None:
    """On the service with no Chromium: the subject is the form."""
    from bbrowse.tui.panes.logs import OpenLogScreen

    session_id = browserless_module_session_id
    app = make_app(browserless_service)
    async with app.run_test(size=(120, 34)) as pilot:
        await wait_for(pilot, lambda: screen_shown(app, SessionsScreen))
        answers: list[object] = []
        app.push_screen(OpenLogScreen(app.client, session_id), answers.append)
        await wait_for(pilot, lambda: screen_shown(app, OpenLogScreen) and app.screen.query("#open-log-programs")
                       and app.screen.query_one("#open-log-programs").option_count > 0)
        form = app.screen
        form.query_one("#open-log-history").value = ""  # the 1000 shown is gone
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "history is required" in str(form.query_one("#open-log-error").render()))
        assert app.screen is form and answers == []
