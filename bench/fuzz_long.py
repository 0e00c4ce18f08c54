"""The long fuzzing run: tests/test_fuzz.py with many examples per operation, a fresh seed, shrinking on.

The suite runs the same test bounded (3 examples per operation, derandomized, the coverage phase's
valid session bodies left out). This runs it for as long as asked: every operation of the service's
OpenAPI document, valid and invalid requests, schemathesis's coverage phase in full (about 40 real
Chromium sessions), each answer checked against the document, the contract's error shapes and the
token (every case is sent again without it and with a wrong one). A failure prints the request that
caused it (a curl line) and the seed that reproduces the run.

    .venv/bin/python bench/fuzz_long.py                    # 200 examples per operation, random seed
    .venv/bin/python bench/fuzz_long.py --examples 1000 --seed 1234 --minutes 60
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="generated cases per operation and mode")
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed (random when not given)")
    parser.add_argument("--minutes", type=float, default=30.0, help="stop the run after this long")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    env = {**os.environ, "BBROWSE_FUZZ_EXAMPLES": str(args.examples), "BBROWSE_FUZZ_SEED": str(seed)}
    command = [
        sys.executable, "-m", "pytest", str(ROOT / "tests" / "test_fuzz.py"), "-p", "no:cacheprovider",
        "-o", "timeout=0", f"--hypothesis-seed={seed}", "-q", "-rA",
    ]
    print(f"fuzzing with {args.examples} examples per operation, seed {seed} (rerun: --seed {seed})", flush=True)
    started = time.monotonic()
    try:
        code = subprocess.run(command, cwd=ROOT, env=env, timeout=args.minutes * 60).returncode
    except subprocess.TimeoutExpired:
        print(f"stopped after {args.minutes:g} minutes (no failure so far)")
        return 0
    print(f"fuzzing took {time.monotonic() - started:.0f} s; seed {seed}; exit code {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
