"""bbrowse over a bad network (issue 24): a service behind `tests/netem.py`'s BadLink, at 50/100/200 ms.

    .venv/bin/python bench/bench_net.py stall  [--rtt 50,100,200] [--stall 30]
    .venv/bin/python bench/bench_net.py launch [--rtt 100] [--runs 3]
    .venv/bin/python bench/bench_net.py keys   [--rtt 50,100,200] [--count 100]
    .venv/bin/python bench/bench_net.py ctrlc  [--rtt 100] [--runs 5]

- stall: the app (Pilot) on a `--kernel-compat` service through the link: a shell printing a numbered line
  every 0.1 s and a log pane following a file written every 0.1 s. The link stalls for `--stall` s, then comes
  back: seconds until the stall is said (top bar, both panes), and until every shell line and every log line
  of the gap is on screen; lines lost and lines twice. Baseline in the same run: a line written with the link
  well, until shown in the log pane (the link's own latency).
- launch: a fresh `bbrowse` process (its command line, as a user starts it; the app headless) on a remote TLS
  service (a test CA, `SSL_CERT_FILE`) through the link, until its sessions table lists the service's sessions;
  the `GET /browsers` calls it made meanwhile.
  Baseline: the same launch straight to the service (loopback, no delay). Target: <= 1 s + 4 round trips.
- keys: a key the prediction cannot help (the shell's key path: `StdinWriter` -> `stdin`, echo back over
  `attach`, `stty raw -echo; cat`), typed at 5/s and at 20/s; p50/p99. Baselines: the link's round trip,
  and a `status` call through the same link between keys (what any call costs: the link, HTTP, the load).
  Targets: p50 <= RTT + 10 ms at 5/s, p99 <= 2 RTT + 20 ms at 20/s.
- ctrlc: `yes` for 2 s in a bash PTY read the shell's way through the link, then ctrl-c through `stdin`,
  until the prompt is back. Target: <= 2 RTT + 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import trustme  # noqa: E402
from conftest import session_area, start_service, stop_service  # noqa: E402
from net_support import TestCA, start_tls_service  # noqa: E402
from netem import BadLink  # noqa: E402

from bbrowse.client import BrowserClient, ClientConfig, PtyOutput, close_shared_clients  # noqa: E402
from bbrowse.config import ShellSettings, defaults  # noqa: E402
from bbrowse.target import Target  # noqa: E402
from bbrowse.tui.app import BbrowseApp  # noqa: E402
from bbrowse.tui.panes.logs import LogsPane, LogTarget  # noqa: E402
from bbrowse.tui.panes.shells import ShellsPane  # noqa: E402
from bbrowse.tui.screens.session import SessionScreen  # noqa: E402
from bbrowse.tui.screens.sessions import SessionsScreen  # noqa: E402
from bbrowse.wire import Browser, LogSource  # noqa: E402

#: Sessions without Chromium (processes, files and logs work): nothing measured here needs a browser.
NO_BROWSER = {"BBROWSE_CHROMIUM": "/nonexistent/chromium"}
COMPAT = {"BBROWSE_KERNEL_COMPAT": "1", **NO_BROWSER}
PROMPT = "PROMPT>"
SHELL = ("env", f"PS1={PROMPT} ", "bash", "--norc", "--noprofile", "-i")


def _address(url: str) -> tuple[str, int]:
    host, _, port = url.rsplit("/", 1)[-1].rpartition(":")
    return host, int(port)


async def _until(pilot, predicate, timeout: float) -> float:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise TimeoutError
        await pilot.pause(0.02)
    return time.monotonic() - started


# ---------------------------------------------------------------- stall

async def stall_once(service, rtt_ms: int, stall: float) -> dict[str, float]:
    link = BadLink(_address(service.url), delay=rtt_ms / 2000)
    client = BrowserClient(service.url, service.token)
    browser = await client.sessions.create(timeout_seconds=600)
    log = session_area(service, browser.session_id, "bench-net") / "app.log"
    log.write_text("")
    app = BbrowseApp(target=Target(ClientConfig(link.url, service.token), "remote"),
                     settings=defaults().model_copy(update={"shell": ShellSettings(command=SHELL)}))
    writer = await asyncio.create_subprocess_exec(
        "sh", "-c", f"i=0; while :; do i=$((i+1)); echo line $i >> '{os.fspath(log)}'; sleep 0.1; done")
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            await _until(pilot, lambda: isinstance(app.screen, SessionsScreen), 30)
            app.push_screen(SessionScreen(Browser.model_validate(browser.model_dump())))
            await _until(pilot, lambda: isinstance(app.screen, SessionScreen) and bool(app.screen.query(ShellsPane)),
                         30)
            screen = app.screen
            tab = screen.query_one(ShellsPane)._tabs.active_pane
            await _until(pilot, lambda: "\n".join(tab.terminal.core.display).rstrip().endswith(PROMPT), 30)
            await pilot.press("alt+2")
            await _until(pilot, lambda: bool(screen.query(LogsPane)), 10)
            panel = await screen.query_one(LogsPane).open_log(LogTarget(LogSource.PATH, str(log)))
            count = log.parent / "ticks"  # the loop's own count, read from outside at the end of the stall
            await tab.shell.write(f"i=0; while :; do i=$((i+1)); echo tick-$i; echo $i > {count}; sleep 0.1; done\r"
                                  .encode())

            def log_numbers() -> list[int]:
                buffer = panel.view.buffer
                return [int(line.split()[1]) for line in (buffer.line(s) for s in range(buffer.first_seq,
                        buffer.end_seq)) if line.startswith("line ")]

            def last_tick() -> int:  # cheap: the visible rows only (polled while measuring)
                shown = [int(line[5:]) for line in tab.terminal.core.display
                         if line.startswith("tick-") and line[5:].isdigit()]
                return max(shown, default=0)

            def last_line() -> int:
                buffer = panel.view.buffer
                line = buffer.line(buffer.end_seq - 1) if buffer.end_seq > buffer.first_seq else ""
                return int(line.split()[1]) if line.startswith("line ") else 0

            def ticks() -> list[int]:
                emulator = tab.terminal.core
                return [int(line[5:]) for line in [*emulator.scrollback_text(), *emulator.display]
                        if line.startswith("tick-") and line[5:].isdigit()]

            await _until(pilot, lambda: len(log_numbers()) > 10 and len(ticks()) > 10, 30)
            # baseline: the link's own latency, a log line written until shown
            before = max(int(x.split()[1]) for x in log.read_text().split("\n") if x)
            started = time.monotonic()
            await _until(pilot, lambda: last_line() > before, 10)
            baseline = time.monotonic() - started

            link.stall()
            stalled = time.monotonic()
            said = await _until(pilot, lambda: app.connection_state == "stalled" and "stalled" in panel.connection
                                and "stalled" in str(tab.terminal.border_title), stall)
            await asyncio.sleep(max(0.0, stall - (time.monotonic() - stalled)))
            last_log = max(int(x.split()[1]) for x in log.read_text().split("\n") if x)
            link.resume()
            back = time.monotonic()
            produced = int(count.read_text().strip() or 0)
            await _until(pilot, lambda: last_line() >= last_log, 60)
            log_back = time.monotonic() - back
            # the shell's output of the gap: every tick the loop had printed when the link came back
            await _until(pilot, lambda: last_tick() >= produced, 120)
            shell_back = time.monotonic() - back
            numbers, shown = log_numbers(), ticks()
            return {
                "baseline": baseline, "said": said, "log_back": log_back, "shell_back": shell_back,
                "log_lost": len(set(range(numbers[0], numbers[-1] + 1)) - set(numbers)),
                "log_twice": len(numbers) - len(set(numbers)),
                "shell_lost": len(set(range(shown[0], shown[-1] + 1)) - set(shown)),
                "shell_twice": len(shown) - len(set(shown)),
            }
    finally:
        writer.kill()
        await writer.wait()
        await client.sessions.delete(browser.session_id)
        await close_shared_clients()
        link.close()


def stall_bench(rtts: list[int], stall: float) -> None:
    service = start_service(Path(tempfile.mkdtemp(prefix="bench-net-")), extra_env=COMPAT)
    try:
        for rtt in rtts:
            r = asyncio.run(stall_once(service, rtt, stall))
            print(f"RTT {rtt:3d} ms, {stall:g} s stall: said after {r['said']:.1f} s; back on screen: log "
                  f"{r['log_back']:.2f} s, shell {r['shell_back']:.2f} s (target <= 2 s); lost/twice: log "
                  f"{r['log_lost']:.0f}/{r['log_twice']:.0f}, shell {r['shell_lost']:.0f}/{r['shell_twice']:.0f}; "
                  f"baseline (a line through the link well) {r['baseline']:.3f} s, ratio "
                  f"{max(r['log_back'], r['shell_back']) / r['baseline']:.1f}x", flush=True)
    finally:
        stop_service(service)


# ---------------------------------------------------------------- launch

LAUNCH = """
import importlib.abc, importlib.machinery, sys, time

def after_import(name, patch):
    # `patch(module)` once the module is imported by bbrowse itself, wherever that happens: `bbrowse` resolves its
    # service and lists its sessions before it imports the app, and a patch made here must not import it sooner.
    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            run = spec.loader.exec_module
            def exec_module(module):
                run(module)
                patch(module)
            spec.loader.exec_module = exec_module
            return spec
    sys.meta_path.insert(0, Hook())

calls = []

def count_listings(transport):
    original_request = transport.Transport.request
    async def request(self, method, path, **kw):
        if method == "GET" and path == "/browsers":
            calls.append(path)
        return await original_request(self, method, path, **kw)
    transport.Transport.request = request

def exit_when_listed(sessions):
    original = sessions.SessionsScreen._apply
    def apply(self):
        original(self)
        if self.query_one("#sessions-table").row_count:
            self.app.call_after_refresh(self.app.exit)
    sessions.SessionsScreen._apply = apply

def headless(app):
    original_run = app.BbrowseApp.run
    app.BbrowseApp.run = lambda self, **kw: original_run(self, headless=True)
    app.leave_at_once = lambda the_app: None  # it ends the process (os._exit) before the figure is printed

after_import("bbrowse.client.transport", count_listings)
after_import("bbrowse.tui.screens.sessions", exit_when_listed)
after_import("bbrowse.tui.app", headless)
sys.argv = ["bbrowse"]
from bbrowse.cli import main
try:
    main()
except SystemExit:
    pass
print(time.time() - float(sys.argv_started), len(calls))
"""


def launch_bench(rtts: list[int], runs: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-net-ca-"))
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert.private_key_pem.write_to_path(str(folder / "key.pem"))
    (folder / "cert.pem").write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    test_ca = TestCA(ca, folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    service = start_tls_service(folder / "state", test_ca, extra_env=NO_BROWSER)
    try:
        verify = ssl.create_default_context(cafile=str(test_ca.ca_file))
        with httpx.Client(base_url=service.url, headers=service.headers, timeout=60, verify=verify) as http:
            for _ in range(3):
                http.post("/browsers", json={"timeout_seconds": 600})
        env = {k: v for k, v in os.environ.items() if k not in ("KERNEL_API_KEY", "KERNEL_BASE_URL")}
        env.update(KERNEL_API_KEY=service.token, SSL_CERT_FILE=str(test_ca.ca_file))

        def one(url: str) -> tuple[float, int]:
            out = subprocess.run([sys.executable, "-c", LAUNCH.replace("sys.argv_started", repr(time.time()))],
                                 env={**env, "KERNEL_BASE_URL": url, "BBROWSE_STATE_DIR": tempfile.mkdtemp()},
                                 capture_output=True, text=True, timeout=120)
            if out.returncode != 0 or not out.stdout.strip():
                raise RuntimeError(f"bbrowse exited {out.returncode}: {out.stderr[-2000:]}")
            seconds, calls = out.stdout.strip().splitlines()[-1].split()
            return float(seconds), int(calls)

        base = [one(service.url) for _ in range(runs)]
        print(f"loopback TLS: launch to the sessions table listed: median "
              f"{statistics.median(b[0] for b in base):.3f} s, GET /browsers calls {[b[1] for b in base]}", flush=True)
        for rtt in rtts:
            with BadLink(_address(service.url), delay=rtt / 2000, scheme="https") as link:
                url = link.url.replace("127.0.0.1", "localhost")
                timings = [one(url) for _ in range(runs)]
            median = statistics.median(t[0] for t in timings)
            print(f"RTT {rtt:3d} ms TLS: median {median:.3f} s (target <= {1 + 4 * rtt / 1000:.2f} s = 1 s + 4 RTT), "
                  f"+{median - statistics.median(b[0] for b in base):.3f} s over loopback; GET /browsers calls "
                  f"{[t[1] for t in timings]}", flush=True)
    finally:
        stop_service(service)


# ---------------------------------------------------------------- keys

async def keys_once(service, rtt_ms: int, count: int, rate: float) -> tuple[list[float], list[float]]:
    link = BadLink(_address(service.url), delay=rtt_ms / 2000)
    client = BrowserClient(link.url, service.token)
    browser = await client.sessions.create(timeout_seconds=600)
    try:
        proc = await client.processes.spawn(browser.session_id, "sh", args=["-c", "stty raw -echo; exec cat"],
                                            allocate_tty=True, rows=24, cols=80)
        echoed: asyncio.Queue[float] = asyncio.Queue()

        def output(data: bytes) -> None:
            for _ in data:
                echoed.put_nowait(time.monotonic())

        pty = PtyOutput(client, browser.session_id, proc.process_id, on_output=output, size=(24, 80))
        runner = asyncio.ensure_future(pty.run())
        writer = client.processes.stdin_writer(browser.session_id, proc.process_id)
        await asyncio.sleep(1.0)
        while not echoed.empty():
            echoed.get_nowait()
        latencies, calls = [], []
        for _ in range(count):
            sent = time.monotonic()
            writer.write(b"x")
            latencies.append(await asyncio.wait_for(echoed.get(), 10) - sent)
            await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - sent)))
        for _ in range(count // 2):  # the baseline at the same pace: a call through the same link
            asked = time.monotonic()
            await client.processes.status(browser.session_id, proc.process_id)
            calls.append(time.monotonic() - asked)
            await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - asked)))
        runner.cancel()
        return latencies, calls
    finally:
        await client.sessions.delete(browser.session_id)
        await close_shared_clients()
        link.close()


def keys_bench(rtts: list[int], count: int) -> None:
    service = start_service(Path(tempfile.mkdtemp(prefix="bench-net-")), extra_env=COMPAT)
    try:
        for rtt in rtts:
            for rate, (quantile, target) in ((5.0, (50, rtt + 10)), (20.0, (99, 2 * rtt + 20))):
                keys, calls = asyncio.run(keys_once(service, rtt, count, rate))
                values = sorted(v * 1000 for v in keys)
                p50 = statistics.median(values)
                p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
                got = p50 if quantile == 50 else p99
                call = statistics.median(calls) * 1000 if calls else float("nan")
                print(f"RTT {rtt:3d} ms, {rate:g} keys/s: p50 {p50:.1f} ms, p99 {p99:.1f} ms; target p{quantile} <= "
                      f"{target} ms: {'met' if got <= target else 'NOT met'}; ratio to the RTT {p50 / rtt:.2f}x; "
                      f"baseline, a status call through the same link: p50 {call:.1f} ms (key p50 "
                      f"{p50 / call:.2f}x)", flush=True)
    finally:
        stop_service(service)


# ---------------------------------------------------------------- ctrl-c

async def ctrl_c_once(service, rtt_ms: int) -> float:
    """`yes` for 2 s in a bash PTY through the link (output read the shell's way, `PtyOutput` over attach),
    then ctrl-c through `stdin`: seconds until the prompt is back."""
    link = BadLink(_address(service.url), delay=rtt_ms / 2000)
    client = BrowserClient(link.url, service.token)
    browser = await client.sessions.create(timeout_seconds=600)
    try:
        proc = await client.processes.spawn(browser.session_id, SHELL[0], args=list(SHELL[1:]), allocate_tty=True,
                                            rows=24, cols=80)
        tail = bytearray()
        seen = asyncio.Event()

        def output(data: bytes) -> None:
            tail.extend(data)
            del tail[:-4096]
            if PROMPT.encode() in tail:
                seen.set()

        pty = PtyOutput(client, browser.session_id, proc.process_id, on_output=output, size=(24, 80))
        runner = asyncio.ensure_future(pty.run())
        writer = client.processes.stdin_writer(browser.session_id, proc.process_id)
        await asyncio.wait_for(seen.wait(), 30)
        writer.write(b"yes\r")
        await asyncio.sleep(0.5)
        seen.clear()
        tail.clear()
        await asyncio.sleep(2.0)
        sent = time.monotonic()
        writer.write(b"\x03")
        await asyncio.wait_for(seen.wait(), 60)
        runner.cancel()
        return time.monotonic() - sent
    finally:
        await client.sessions.delete(browser.session_id)
        await close_shared_clients()
        link.close()


def ctrl_c_bench(rtts: list[int], runs: int) -> None:
    service = start_service(Path(tempfile.mkdtemp(prefix="bench-net-")), extra_env=COMPAT)
    try:
        for rtt in rtts:
            values = [asyncio.run(ctrl_c_once(service, rtt)) for _ in range(runs)]
            median = statistics.median(values)
            print(f"RTT {rtt:3d} ms: ctrl-c during yes until the prompt: median {median * 1000:.0f} ms "
                  f"(runs {', '.join(f'{v * 1000:.0f}' for v in values)}); target <= {2 * rtt + 300} ms "
                  f"(2 RTT + 300 ms): {'met' if median * 1000 <= 2 * rtt + 300 else 'NOT met'}", flush=True)
    finally:
        stop_service(service)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("stall")
    s.add_argument("--rtt", default="50,100,200")
    s.add_argument("--stall", type=float, default=30.0)
    la = sub.add_parser("launch")
    la.add_argument("--rtt", default="100")
    la.add_argument("--runs", type=int, default=3)
    k = sub.add_parser("keys")
    k.add_argument("--rtt", default="50,100,200")
    k.add_argument("--count", type=int, default=100)
    c = sub.add_parser("ctrlc")
    c.add_argument("--rtt", default="100")
    c.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rtts = [int(x) for x in args.rtt.split(",")]
    if args.what == "stall":
        stall_bench(rtts, args.stall)
    elif args.what == "launch":
        launch_bench(rtts, args.runs)
    elif args.what == "ctrlc":
        ctrl_c_bench(rtts, args.runs)
    else:
        keys_bench(rtts, args.count)


if __name__ == "__main__":
    main()
