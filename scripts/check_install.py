"""Does `pip install bbrowse` (what `uv tool install .` / `pipx install .` install) resolve to wheels on every
platform we support?

For macOS arm64/x86_64 and Linux x86_64/aarch64, with Python 3.11 and 3.13, pip's resolver is asked
for wheels only (`pip install --dry-run --only-binary=:all: --platform ... --python-version ...
--target ...`), for the app, and on Python 3.13 (where wheels lag) for the app with its `dev` extras
(what a contributor installs): twelve resolutions, eight at a time. pip evaluates environment markers
for the machine it runs on, not for `--platform`, so the project's own requirements are filtered here
with the target's markers (that is what keeps pyghostty off macOS); markers deeper in the tree are pip's.

macOS is checked from macOS 11 (Big Sur) on, on Intel too: greenlet, which playwright (a dev extra)
needs, publishes CPython 3.13 wheels for macOS 11 and later only, so on macOS 10.15 with Python 3.13
no playwright release installs from wheels (none before 1.40 either; a marker would drop it on every
Intel Mac, where it installs).

Exit status 0 when every target resolves, 1 when one does not (its pip error is printed), 0 with a
"skipped" line when the package index cannot be reached.

    .venv/bin/python scripts/check_install.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.11", "3.13")
# pip does not widen an explicit manylinux tag to older glibc versions: name them (glibc 2.28, as Debian 10).
_MANYLINUX = ("manylinux_2_28", "manylinux_2_27", "manylinux_2_24", "manylinux_2_17", "manylinux2014", "manylinux_2_12",
              "manylinux2010", "manylinux_2_5", "manylinux1")
# name, pip's --platform tags, the markers that differ from this machine's
TARGETS = [
    ("macOS arm64", ["macosx_11_0_arm64"], {"sys_platform": "darwin", "platform_system": "Darwin",
                                            "platform_machine": "arm64"}),
    ("macOS x86_64", ["macosx_11_0_x86_64"], {"sys_platform": "darwin", "platform_system": "Darwin",
                                               "platform_machine": "x86_64"}),
    ("Linux x86_64", [f"{tag}_x86_64" for tag in _MANYLINUX], {"sys_platform": "linux", "platform_system": "Linux",
                                                 "platform_machine": "x86_64"}),
    ("Linux aarch64", [f"{tag}_aarch64" for tag in _MANYLINUX], {"sys_platform": "linux", "platform_system": "Linux",
                                                   "platform_machine": "aarch64"}),
]
_UNREACHABLE = ("NewConnectionError", "Failed to establish a new connection", "Temporary failure in name resolution",
                "Network is unreachable", "Max retries exceeded", "ProxyError", "ConnectTimeoutError")


def requirements(markers: dict[str, str], python: str, extras: tuple[str, ...] = ()) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    environment = {**markers, "python_version": python, "python_full_version": f"{python}.0",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    kept = []
    lines = [*project["dependencies"], *(line for extra in extras for line in project["optional-dependencies"][extra])]
    for line in lines:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            requirement.marker = None
            kept.append(str(requirement))
    return kept


def check(name: str, platforms: list[str], markers: dict[str, str], python: str, extras: tuple[str, ...],
          tmp: Path) -> tuple[str, int, str]:
    label = f"{name}, Python {python}" + "".join(f", [{extra}]" for extra in extras)
    work = tmp / label.replace(" ", "_").replace(",", "").replace("[", "").replace("]", "")
    work.mkdir()
    (work / "requirements.txt").write_text("\n".join(requirements(markers, python, extras)) + "\n")
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
               "--only-binary=:all:", "--python-version", python, "--target", str(work / "target"),
               "--disable-pip-version-check", "-r", str(work / "requirements.txt")]
    for platform in platforms:
        command += ["--platform", platform]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    errors = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                       if not line.startswith("WARNING: Location"))
    return label, done.returncode, errors


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bbrowse-resolve-") as tmp, ThreadPoolExecutor(8) as pool:
        jobs = [pool.submit(check, name, platforms, markers, python, extras, Path(tmp))
                for name, platforms, markers in TARGETS for python in PYTHONS
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
