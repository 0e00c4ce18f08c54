"""The commands agree with the app and refuse what they cannot use (issue 22, items 13 and 20): a start URL
the form refuses is refused by `bbrowse new`, both propose the same inactivity timeout, and an unknown
profile or theme given on the command line is an error naming what exists. Real CLI, real service (the one
with no Chromium: the subject is the commands' checks and output)."""

from __future__ import annotations

import json

from cli_support import bb_here, cli_env

from bbrowse.session_options import DEFAULT_TIMEOUT


def test_new_refuses_what_the_form_refuses_and_uses_the_forms_default_timeout(browserless_service):
    service = browserless_service
    refused = bb_here(service, "new", "--start-url", "not a url")
    assert refused.returncode == 2, refused
    assert refused.stderr.decode().startswith("error: usage: ") and "Start URL must be a URL" in refused.stderr.decode()
    bare = bb_here(service, "new", "--start-url", "example.com")
    assert bare.returncode == 2 and "https://example.com" in bare.stderr.decode()

    created = bb_here(service, "new", "--json")
    assert created.returncode == 0, created.stderr
    browser = json.loads(created.stdout)
    try:
        assert browser["timeout_seconds"] == DEFAULT_TIMEOUT == 300  # the app's form proposes it too (pinned in
        # test_app_newcomer_reconnect, where the form is open)
    finally:
        bb_here(service, "rm", browser["session_id"])


def test_an_unknown_profile_or_theme_on_the_command_line_is_an_error(browserless_service, tmp_path):
    service = browserless_service
    env = cli_env(service, home=tmp_path)
    del env["KERNEL_BASE_URL"], env["KERNEL_API_KEY"]
    info = bb_here(service, "--profile", "nope", "info", env=env)
    assert info.returncode == 1
    assert info.stderr.decode() == "error: config: --profile: no profile named 'nope' (known: cloud, embedded)\n"
    assert b"config dir" in info.stdout  # the paths are still shown: info is where one goes to find the file

    theme = bb_here(service, "--theme", "nope", "sessions", env=env)
    assert theme.returncode == 2
    err = theme.stderr.decode()
    assert err.count("\n") == 1 and "no theme named 'nope'" in err and "bbrowse-dark" in err and "textual-dark" in err
    assert bb_here(service, "--theme", "bbrowse-light", "info", env=env).returncode == 0
