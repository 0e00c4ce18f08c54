"""Spawn latency: what making children end with the service costs a spawn.

In one process sized like a busy service (`--rss-mb`, 150 MB by default: fork copies page tables, so
a `preexec_fn` costs more the bigger the service is), `process_launch.launch` starts `true` N times
(pipes, and PTY) and each child is reaped. Three ways:

- no guardian: the spawn as it was before the guardian (pipes on CPython's vfork path);
- guardian: the spawn as it is (vfork, plus a few bytes written to the guardian's pipe);
- preexec PDEATHSIG: every child forked to set the parent-death signal (the alternative not taken).

    .venv/bin/python bench/bench_spawn.py                    # 300 spawns each, 150 MB
    .venv/bin/python bench/bench_spawn.py --count 1000 --rss-mb 300
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bbrowse.service import lifetime, process_launch  # noqa: E402
from bbrowse.wire import SpawnRequest  # noqa: E402


def measure(count: int, tty: bool) -> list[float]:
    request = SpawnRequest(command="true")
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        child = process_launch.launch(request, Path.cwd(), tty=tty)
        samples.append(time.perf_counter() - started)
        child.popen.wait()
        for fd in (child.master, child.stdin, child.stdout, child.stderr):
            if fd is not None:
                os.close(fd)
    return samples


def describe(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"{name:<32} p50 {statistics.median(ms):6.2f} ms   p90 {ms[int(0.9 * len(ms))]:6.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--rss-mb", type=int, default=150)
    args = parser.parse_args()
    ballast = bytearray(args.rss_mb * 1024 * 1024)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1  # touch every page: resident, as a service's heap is
    print(f"load average {os.getloadavg()[0]:.2f}; process RSS ~{args.rss_mb} MB; {args.count} spawns each")

    real_watch = lifetime.Guardian.watch
    real_popen = process_launch._popen

    def with_pdeathsig(argv, request, cwd, env, stdio, tty, user_kwargs):
        if tty:
            return real_popen(argv, request, cwd, env, stdio, tty, user_kwargs)
        return subprocess.Popen(argv, cwd=cwd, env=env, close_fds=True, start_new_session=True,
                                preexec_fn=lifetime.die_with_service, **stdio, **user_kwargs)

    for tty in (False, True):
        kind = "pty" if tty else "pipes"
        lifetime.Guardian.watch = lambda self, pid: None
        measure(20, tty)
        print(describe(f"{kind}: no guardian (before)", measure(args.count, tty)))
        lifetime.Guardian.watch = real_watch
        measure(20, tty)
        print(describe(f"{kind}: guardian (now)", measure(args.count, tty)))
        if not tty:
            lifetime.Guardian.watch = lambda self, pid: None
            process_launch._popen = with_pdeathsig
            measure(20, tty)
            print(describe(f"{kind}: preexec PDEATHSIG", measure(args.count, tty)))
            process_launch._popen = real_popen
            lifetime.Guardian.watch = real_watch
    lifetime.GUARDIAN.stop()
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
