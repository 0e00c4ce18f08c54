"""`bbrowse exec --all` over 20 sessions against one `bbrowse exec ID` (the baseline, same run).

Run on purpose, not in the test suite:

    .venv/bin/python bench/bench_exec_all.py [--sessions 20] [--runs 5]

It starts its own `bbrowse serve` (without Chromium: exec needs none, and 20 browsers would only load the
machine), N sessions, then runs the real command line as a user does, alternating: `bbrowse exec ID --
sh -c 'sleep 0.2; uname -n'` on one session, and `bbrowse exec --all -- <the same>` on all of them;
median wall time of each. The same through the client alone (no process start): one `exec` call against
all N at once. Target (issue 26): --all within 1.5x the time of one exec.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cli_support import bb, cli_env  # noqa: E402
from conftest import start_service, stop_service  # noqa: E402

from bbrowse.client import BrowserClient  # noqa: E402

COMMAND = ("sh", "-c", "sleep 0.2; uname -n")


def timed(service, env, *args: str) -> float:
    started = time.monotonic()
    result = bb(service, *args, env=env)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    return elapsed


async def client_times(client: BrowserClient, ids: list[str], runs: int) -> tuple[float, float]:
    one, many = [], []
    for _ in range(runs):
        started = time.monotonic()
        await client.processes.exec(ids[0], COMMAND[0], COMMAND[1:])
        one.append(time.monotonic() - started)
        started = time.monotonic()
        await asyncio.gather(*(client.processes.exec(i, COMMAND[0], COMMAND[1:]) for i in ids))
        many.append(time.monotonic() - started)
    return statistics.median(one), statistics.median(many)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-exec-all-"))
    service = start_service(root / "state", extra_env={"BBROWSE_CHROMIUM": "/nonexistent/chromium"})
    try:
        client = BrowserClient(service.url, service.token)
        ids = [(await client.sessions.create(name=f"exec-{i:02d}", timeout_seconds=900)).session_id
               for i in range(args.sessions)]
        env = cli_env(service, home=root)
        timed(service, env, "exec", ids[0], "--", *COMMAND)  # warm: imports compiled, pools made
        one, many = [], []
        for _ in range(args.runs):
            one.append(timed(service, env, "exec", ids[0], "--", *COMMAND))
            many.append(timed(service, env, "exec", "--all", "--", *COMMAND))
        check = bb(service, "exec", "--all", "--", *COMMAND, env=env)
        blocks = check.stdout.decode().count("==> ")
        assert blocks == args.sessions, (blocks, check.stdout[:500])
        print(f"command line: one exec {statistics.median(one) * 1000:.0f} ms (median of {args.runs}), "
              f"exec --all over {args.sessions} sessions {statistics.median(many) * 1000:.0f} ms: "
              f"{statistics.median(many) / statistics.median(one):.2f}x (target <= 1.5x)")
        c_one, c_many = await client_times(client, ids, args.runs)
        print(f"client only: one exec {c_one * 1000:.0f} ms, {args.sessions} at once {c_many * 1000:.0f} ms: "
              f"{c_many / c_one:.2f}x")
        for session_id in ids:
            await client.sessions.delete(session_id)
    finally:
        stop_service(service)


if __name__ == "__main__":
    asyncio.run(main())
