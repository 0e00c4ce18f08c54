"""`BrowserClient`: the one object callers hold, grouping the service's areas.

    client = BrowserClient()                      # KERNEL_BASE_URL / KERNEL_API_KEY
    client = BrowserClient("http://127.0.0.1:7780", "token")
    browser = await client.sessions.create(name="work")
    proc = await client.processes.spawn(browser.session_id, "ls", ["-l"])
    async with client.processes.stdout_stream(browser.session_id, proc.process_id) as events:
        async for event in events: ...

Creating a client is cheap: every client of the same base URL and token shares one pooled
httpx.AsyncClient per event loop (see `pool.py`), so make as many as is convenient.
"""

from __future__ import annotations

import httpx

from bbrowse.client.computer import Computer
from bbrowse.client.config import ClientConfig
from bbrowse.client.files import Files
from bbrowse.client.logs import Logs
from bbrowse.client.processes import Processes
from bbrowse.client.replays import Replays
from bbrowse.client.routing import RouteCache
from bbrowse.client.sessions import Sessions
from bbrowse.client.telemetry import Telemetry
from bbrowse.client.transport import Transport


class BrowserClient:
    """Async client of the Browser Instance Control Service (Kernel's browser API or `bbrowse serve`)."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        config: ClientConfig | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        """`config` wins over `base_url`/`token`, which win over the environment. Pass `http` to use your own
        httpx client (you then own its lifetime; it must carry the base URL and Authorization header)."""
        self.config = config or ClientConfig.resolve(base_url, token)
        self.transport = Transport(self.config, http)
        self.sessions = Sessions(self.transport)
        self.processes = Processes(self.transport)
        self.fs = Files(self.transport)
        self.logs = Logs(self.transport, lambda id_or_name, path: self.fs.read_file(id_or_name, path))
        self.replays = Replays(self.transport)
        self.computer = Computer(self.transport)
        self.telemetry = Telemetry(self.transport)

    @property
    def routes(self) -> RouteCache:
        """Where each session's VM answers, learned from the Browser objects this client read (`routing.py`)."""
        return self.transport.routes

    @property
    def base_url(self) -> str:
        return self.config.base_url

    def __repr__(self) -> str:
        return f"BrowserClient({self.config.base_url!r})"
