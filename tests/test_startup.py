"""Start-up: `bbrowse` asks for the embedded service before it loads the app, the commands or the client's
streaming machinery, so the service starts while they load (bench/bench_startup.py has the timings)."""

from __future__ import annotations

import json
import subprocess
import sys

#: What `bbrowse` (no command) has done when `target.resolve_soon` is called: parse the command line and
#: read the settings. The modules loaded by then are what delays the service's start.
BEFORE_THE_SERVICE = """
import json, sys
import bbrowse.cli, bbrowse.config, bbrowse.target
bbrowse.config.load_app_settings()
print(json.dumps(sorted(sys.modules)))
"""
#: Modules the service's start must not wait for.
HEAVY = ("textual", "rich", "httpx", "websockets", "bbrowse.tui", "bbrowse.commands.", "bbrowse.client.attach",
         "bbrowse.client.client", "bbrowse.service")


def test_the_service_is_asked_for_before_the_app_and_the_commands_load(tmp_path):
    loaded = json.loads(subprocess.run(
        [sys.executable, "-c", BEFORE_THE_SERVICE], capture_output=True, text=True, check=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BBROWSE_CONFIG_DIR": str(tmp_path)},
    ).stdout)
    assert [m for m in loaded if m.startswith(HEAVY)] == []
