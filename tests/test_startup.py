"""Start-up: `bbrowse` asks for the embedded service before it loads the settings, the app, the commands or the
client, so the service starts while they load (bench/bench_startup.py has the timings)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

from bbrowse import cli, startup
from bbrowse.client import ENV_BASE_URL, ENV_TOKEN
from bbrowse.config import ENV_PROFILE, Overrides, load_settings
from bbrowse.startup import freeze_more, pause_collection, resume_collection

#: `bbrowse` (no command) up to the moment it asks for the embedded service (`launcher.find_or_start_soon`), which
#: here prints the modules loaded by then and ends the process: what is loaded by then delays the service's start.
BEFORE_THE_SERVICE = """
import json, os, sys
from bbrowse import launcher

def asked():
    print(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None)), flush=True)
    os._exit(0)

launcher.find_or_start_soon = asked
sys.argv = ["bbrowse"]
from bbrowse.cli import main
main()
"""
#: Modules the service's start must not wait for.
HEAVY = ("textual", "rich", "httpx", "websockets", "pydantic", "bbrowse.config", "bbrowse.client", "bbrowse.tui",
         "bbrowse.commands.", "bbrowse.service")


def test_the_service_is_asked_for_before_the_settings_the_app_and_the_commands_load(tmp_path):
    loaded = json.loads(subprocess.run(
        [sys.executable, "-c", BEFORE_THE_SERVICE], capture_output=True, text=True, check=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BBROWSE_CONFIG_DIR": str(tmp_path)},
    ).stdout)
    assert [m for m in loaded if m.startswith(HEAVY)] == []


FILES = {
    "no file": None,
    "a theme only": 'theme = "nord"\n',
    "profile embedded": 'profile = "embedded"\n',
    "profile cloud": 'profile = "cloud"\n',
    "a remote profile chosen": 'profile = "work"\n[profiles.work]\nkind = "remote"\nbase_url = "http://10.0.0.5:7780"\n',
    "a remote profile not chosen": '[profiles.work]\nkind = "remote"\nbase_url = "http://10.0.0.5:7780"\n',
    "embedded redefined": '[profiles.embedded]\nkind = "remote"\nbase_url = "http://10.0.0.5:7780"\n',
    "not TOML": "profile = \n",
}
ENVIRONMENTS = {
    "nothing": {},
    "KERNEL_API_KEY": {ENV_TOKEN: "key"},
    "KERNEL_BASE_URL": {ENV_BASE_URL: "http://10.0.0.5:7780"},
    "BBROWSE_PROFILE=cloud": {ENV_PROFILE: "cloud"},
}


@pytest.mark.parametrize("flag", [None, "cloud"])
def test_the_early_start_agrees_with_the_settings(tmp_path, monkeypatch, flag):
    """The embedded service is started early only when the settings then pick it: never a service for nothing."""
    assert set(cli.SERVICE_NAMING_ENV) == {ENV_PROFILE, ENV_BASE_URL, ENV_TOKEN}
    early = []
    for file_name, text in FILES.items():
        for env_name, env in ENVIRONMENTS.items():
            folder = tmp_path / f"{file_name}-{env_name}".replace(" ", "-")
            folder.mkdir()
            if text is not None:
                (folder / "config.toml").write_text(text)
            monkeypatch.setenv("BBROWSE_CONFIG_DIR", str(folder))
            for name in cli.SERVICE_NAMING_ENV:
                monkeypatch.delenv(name, raising=False)
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            if cli.names_no_service(flag):
                early.append((file_name, env_name))
                kind = load_settings(overrides=Overrides(profile=flag)).active_profile.kind
                assert kind == "embedded", (file_name, env_name)
    expected = [] if flag else [(f, "nothing") for f in ("no file", "a theme only", "a remote profile not chosen")]
    assert early == expected


#: The app up to its first screen, on a service it cannot reach (what it loads does not depend on the answer).
APP_STARTED = """
import asyncio, json, sys
from bbrowse.tui.app import BbrowseApp, StartingScreen

def unreachable():
    raise OSError("no service here")

async def main():
    app = BbrowseApp(resolve=unreachable)
    async with app.run_test() as pilot:
        while app.connection_state != "failed":
            await pilot.pause(0.05)
        assert isinstance(app.screen, StartingScreen)
    print(json.dumps(sorted(sys.modules)))

asyncio.run(main())
"""


def test_the_first_screen_loads_no_session_screen_nor_pane(tmp_path):
    loaded = json.loads(subprocess.run(
        [sys.executable, "-c", APP_STARTED], capture_output=True, text=True, check=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BBROWSE_CONFIG_DIR": str(tmp_path)},
    ).stdout)
    assert [m for m in loaded if m == "bbrowse.tui.screens.session" or m.startswith("bbrowse.tui.panes")] == []
    assert [m for m in loaded if m.split(".")[0] in ("websockets", "PIL", "textual_image")] == []  # shells, pictures


def test_bbrowse_loads_httpx_without_its_command_line(tmp_path):
    """httpx's own command line (click, rich's progress bars and syntax, pygments' lexers) is never loaded."""
    loaded = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, sys; import bbrowse.cli; from bbrowse.client import BrowserClient; "
                               "import httpx; httpx.Client().close(); "
                               "print(json.dumps(sorted(m for m, module in sys.modules.items() if module)))"],
        capture_output=True, text=True, check=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    ).stdout)
    assert "httpx" in loaded
    assert [m for m in loaded if m in ("httpx._main", "rich.progress", "rich.syntax", "pygments.lexers")] == []


def test_collection_paused_while_starting_resumes_with_what_start_up_made_frozen(monkeypatch):
    monkeypatch.setattr(startup, "_froze_at_start", False)  # (this process's, whatever this test does)
    assert gc.isenabled()
    gc.unfreeze()  # (what conftest froze after collection)
    resume_collection()  # not paused: nothing frozen (a test's app or service never freezes the test process)
    freeze_more()  # (the app's warm-up, done)
    assert gc.get_freeze_count() == 0
    pause_collection()
    try:
        assert not gc.isenabled()
    finally:
        resume_collection()
    try:
        assert gc.isenabled() and gc.get_freeze_count() > 0
        frozen = gc.get_freeze_count()
        loaded_since = [[index] for index in range(1000)]  # what the warm-up loads later: frozen too
        freeze_more()
        assert gc.get_freeze_count() >= frozen + len(loaded_since)
    finally:
        gc.unfreeze()
        gc.collect()
        gc.freeze()  # as conftest left it


#: `bbrowse serve` up to the moment its app is built (`resume_collection`), on a socket checked as it is bound.
SERVE_STARTED = """
import json, os, socket, sys
from bbrowse.service import server

seen = {}
bind_socket = server.bind_socket

def bind(host, port):
    sock = bind_socket(host, port)
    socket.create_connection(sock.getsockname(), timeout=10).close()  # refused unless it listens
    seen["app imported by then"] = "bbrowse.service.app" in sys.modules
    return sock

def started():
    seen["pydantic.v1 imported"] = "pydantic.v1" in sys.modules
    print(json.dumps(seen), flush=True)
    os._exit(0)

server.bind_socket, server.resume_collection = bind, started
server.serve(host="127.0.0.1", port=0, token="t", no_sandbox=True, announce=lambda line: None)
"""


def test_the_service_listens_before_it_imports_its_app_and_builds_it_without_pydantic_v1(tmp_path):
    """A client's first request waits in the backlog while the service loads, instead of being refused and
    polled; and FastAPI's check for pydantic v1 models costs no import of pydantic.v1 (none is used)."""
    seen = json.loads(subprocess.run(
        [sys.executable, "-c", SERVE_STARTED], capture_output=True, text=True, check=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BBROWSE_STATE_DIR": str(tmp_path)},
    ).stdout)
    assert seen == {"app imported by then": False, "pydantic.v1 imported": False}
