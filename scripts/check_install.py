"""Does `pip install bbrowse` (what `uv tool install .` / `pipx install .` install) resolve to wheels on every
platform we support?

For macOS arm64/x86_64 and Linux x86_64/aarch64, with Python 3.11 and 3.13, uv's resolver is asked for
wheels only (`uv pip compile pyproject.toml --only-binary :all: --python-platform ... --python-version ...`),
for the app, and on Python 3.13 (where wheels lag) for the app with its `dev` extras (what a contributor
installs): twelve resolutions, each with the target's own environment markers (that is what keeps
pyghostty off macOS). Linux is checked at glibc 2.28 (Debian 10).

macOS is checked from macOS 11 (Big Sur) on, on Intel too (`MACOSX_DEPLOYMENT_TARGET`): greenlet, which
playwright (a dev extra) needs, publishes CPython 3.13 wheels for macOS 11 and later only, so on macOS 10.15
with Python 3.13 no playwright release installs from wheels (none before 1.40 either; a marker would drop
it on every Intel Mac, where it installs).

Exit status 0 when every target resolves, 1 when one does not (its resolver error is printed), 0 with a
"skipped" line when the package index cannot be reached.

    .venv/bin/python scripts/check_install.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).parent / "uv"
PYTHONS = ("3.11", "3.13")
MACOS = "11.0"
# name, uv's --python-platform
TARGETS = [
    ("macOS arm64", "aarch64-apple-darwin"),
    ("macOS x86_64", "x86_64-apple-darwin"),
    ("Linux x86_64", "x86_64-manylinux_2_28"),
    ("Linux aarch64", "aarch64-manylinux_2_28"),
]
_UNREACHABLE = ("error sending request for url", "dns error", "tcp connect error", "Connection refused",
                "operation timed out", "Network is unreachable")


def check(name: str, platform: str, python: str, extras: tuple[str, ...]) -> tuple[str, int, str]:
    label = f"{name}, Python {python}" + "".join(f", [{extra}]" for extra in extras)
    # (no Python of the target's version is fetched: wheels only, nothing is built)
    command = [str(UV), "pip", "compile", str(ROOT / "pyproject.toml"), "--quiet", "--no-header",
               "--no-python-downloads", "--only-binary", ":all:", "--python-platform", platform,
               "--python-version", python, "--output-file", os.devnull]
    for extra in extras:
        command += ["--extra", extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MACOSX_DEPLOYMENT_TARGET": MACOS})
    return label, done.returncode, (done.stdout + done.stderr).strip()


def main() -> int:
    with ThreadPoolExecutor(4) as pool:
        jobs = [pool.submit(check, name, platform, python, extras)
                for name, platform in TARGETS for python in PYTHONS
                for extras in ((), ("dev",))[: 1 + (python == PYTHONS[-1])]]
        results = [job.result() for job in jobs]
    failed = [(label, errors) for label, code, errors in results if code]
    if failed and all(any(sign in errors for sign in _UNREACHABLE) for _, errors in failed):
        print("install check: skipped, the package index cannot be reached")
        return 0
    for label, code, _ in results:
        print(f"install check: {label}: {'resolves to wheels' if not code else 'FAILS'}")
    for label, errors in failed:
        print(f"--- {label}\n{errors}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
