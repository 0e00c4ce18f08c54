"""bbrowse over a real network's ways: TLS with a test CA, an HTTPS_PROXY, links that drop and stall.

Against `--kernel-compat` (the stricter server) through `netem` (tests/net_support.py).
"""

from __future__ import annotations

from app_support import wait_for
from cli_support import BBROWSE, PtyProcess, bb, cli_env
from netem import TLS_HOST

from bbrowse.client import BrowserClient, ClientConfig
from bbrowse.target import Target
from bbrowse.tui.app import BbrowseApp

pytest_plugins = ["net_support"]


def _through_proxy(service, proxy, ca) -> dict[str, str]:
    """The environment of a command that reaches `service` only as `TLS_HOST`, through `proxy`, trusting `ca`."""
    port = service.url.rsplit(":", 1)[1]
    env = cli_env(service, KERNEL_BASE_URL=f"https://{TLS_HOST}:{port}", HTTPS_PROXY=proxy.url,
                  SSL_CERT_FILE=str(ca.ca_file))
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return env


def test_commands_and_attach_over_tls_through_a_connect_proxy(tls_compat_service, connect_proxy, test_ca) -> None:
    """A name only the proxy resolves, a certificate only the test CA signed: `bbrowse new`, `bbrowse shell`
    (its attach WebSocket over wss) and `bbrowse rm` work, every connection tunnelled through the proxy."""
    env = _through_proxy(tls_compat_service, connect_proxy, test_ca)
    port = tls_compat_service.url.rsplit(":", 1)[1]
    untrusted = {**env}
    untrusted.pop("SSL_CERT_FILE")
    refused = bb(tls_compat_service, "sessions", env=untrusted)
    assert refused.returncode != 0 and b"certificate" in refused.stderr.lower(), refused.stderr

    created = bb(tls_compat_service, "new", "--timeout", "120", env=env)
    assert created.returncode == 0, created.stderr
    sid = created.stdout.decode().strip()
    try:
        shell = PtyProcess([*BBROWSE, "shell", sid, "--", "sh", "-c", "echo tls-$((6*7)); read x; exit 3"], env)
        try:
            shell.expect(rb"tls-42")
            shell.send(b"\r")
            assert shell.wait(30) == 3
        finally:
            shell.close()
    finally:
        assert bb(tls_compat_service, "rm", sid, env=env).returncode == 0
    assert connect_proxy.tunnels and set(connect_proxy.tunnels) == {f"{TLS_HOST}:{port}"}
    # calls and the attach WebSocket (a connection of its own) at least
    assert len(connect_proxy.tunnels) >= 2


async def test_app_lists_sessions_over_tls_through_a_connect_proxy(tls_compat_service, connect_proxy, test_ca,
                                                                   monkeypatch) -> None:
    port = tls_compat_service.url.rsplit(":", 1)[1]
    monkeypatch.setenv("HTTPS_PROXY", connect_proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(test_ca.ca_file))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    config = ClientConfig(f"https://{TLS_HOST}:{port}", tls_compat_service.token)
    client = BrowserClient(config=config)
    browser = await client.sessions.create(timeout_seconds=120, name="over-tls")
    try:
        app = BbrowseApp(target=Target(config, "remote"))
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: browser.session_id in [
                key.value for key in app.screen.query_one("#sessions-table").rows], what="the session listed")
    finally:
        await client.sessions.delete(browser.session_id)
    assert f"{TLS_HOST}:{port}" in connect_proxy.tunnels

