"""A bad link in front of a service, from the command line (the proxy of tests/netem.py).

    .venv/bin/python bench/netem.py 127.0.0.1:7780 --delay 50 [--rate-mbit 10] [--port 7781]

Then point a client at the printed URL (`KERNEL_BASE_URL`, or a profile's `base_url`) and type commands
on standard input while it runs: `stall`, `resume`, `drop [SECONDS]` (reset every connection, refuse new
ones for SECONDS), `delay MS` (one way), `rate MBIT` (0: no cap), `stats`, `quit`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from netem import BadLink


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", help="host:port of the service")
    parser.add_argument("--delay", type=float, default=50.0, help="one-way delay in ms (round trip: twice it)")
    parser.add_argument("--rate-mbit", type=float, default=0.0, help="bandwidth cap each way, Mbit/s (0: none)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    parser.add_argument("--scheme", default="http", choices=("http", "https"), help="the service's scheme")
    args = parser.parse_args()
    host, _, port = args.target.rpartition(":")
    link = BadLink((host or "127.0.0.1", int(port)), delay=args.delay / 1000, port=args.port, scheme=args.scheme,
                   rate=args.rate_mbit * 125_000 or None)
    print(f"bad link: {link.url} -> {args.target} ({args.delay:g} ms each way)", flush=True)
    try:
        for line in sys.stdin:
            word, *rest = line.split() or [""]
            if word == "stall":
                link.stall()
            elif word == "resume":
                link.resume()
            elif word == "drop":
                print(f"reset {link.drop(float(rest[0]) if rest else 0.0)} connections", flush=True)
            elif word == "delay" and rest:
                link.set(delay=float(rest[0]) / 1000)
            elif word == "rate" and rest:
                link.set(rate=float(rest[0]) * 125_000 or None)
            elif word == "stats":
                print(f"{link.open_connections} open, {link.connections} made, {link.bytes_up} B up, "
                      f"{link.bytes_down} B down{', stalled' if link.stalled else ''}", flush=True)
            elif word == "quit":
                break
            elif word:
                print("commands: stall, resume, drop [S], delay MS, rate MBIT, stats, quit", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        link.close()


if __name__ == "__main__":
    main()
