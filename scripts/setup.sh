#!/usr/bin/env bash
# Installs everything bbrowse needs on a fresh machine: system packages (Chromium, ffmpeg, tmux, Xvfb, xdotool, xclip,
# bubblewrap, when missing and running as root), a virtualenv in .venv, and bbrowse with its dev extras.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
if [ "$(uname -s)" != Linux ]; then
  # `bbrowse serve` needs Linux: the app and the commands use Kernel's cloud or a remote serve here, and
  # the service's programs (Chromium, ffmpeg, Xvfb, xdotool, xclip) are not needed on this machine.
  echo "setup: $(uname -s): the app and the commands only; bbrowse serve needs Linux (see the README)" >&2
else
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
  || command -v google-chrome >/dev/null 2>&1 || need+=(chromium)
command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
# Computer controls on a headful session's display: input (xdotool) and its clipboard (xclip).
command -v xdotool >/dev/null 2>&1 || need+=(xdotool)
command -v xclip >/dev/null 2>&1 || need+=(xclip)
# Each session of `bbrowse serve` is a sandbox made by bubblewrap (without it sessions run on the host).
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing ${need[*]}; install them with your package manager (bbrowse works without, minus browsers)" >&2
  fi
fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv --without-pip .venv  # uv installs into it (pip only where uv cannot, below)
fi
# The dev environment is the lock file's exact versions (every supported platform and Python, by markers), then
# bbrowse itself; `pip check` (uv's) fails when pyproject.toml names a dependency the lock lacks. After changing
# pyproject.toml's dependencies, regenerate the lock (uv keeps the versions it already has):
#   uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 --no-header --no-annotate \
#     -o requirements-dev.lock
# The lock is complete (`pip check` proves it), so nothing is resolved. uv (the lock's own version) installs it
# and bbrowse, several times faster than pip (docs/decisions.md); pip does it when uv cannot. uv compiles the
# bytecode as pip does (it does not by default): else the suite's first processes compile the same modules at once.
uv=$(grep -E '^uv==' requirements-dev.lock | cut -d' ' -f1)
if { "$PY" -m pip --python .venv/bin/python install -q "$uv" 2>/dev/null \
       || .venv/bin/python -m pip install -q "$uv" 2>/dev/null; } \
   && .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python --no-deps -r requirements-dev.lock \
   && .venv/bin/uv pip install -q --python .venv/bin/python --no-deps -e .; then
  .venv/bin/uv pip check -q --python .venv/bin/python
else
  echo "setup: uv could not install the lock; pip installs it" >&2
  .venv/bin/python -m ensurepip -q >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q --no-deps -r requirements-dev.lock
  .venv/bin/python -m pip install -q --no-deps -e .
  .venv/bin/python -m pip check >/dev/null
fi
# bbrowse's own bytecode too (an editable install compiles none): where PYTHONDONTWRITEBYTECODE is set, every
# start of the app, the service or a command would otherwise compile the modules it imports again.
.venv/bin/python -m compileall -q bbrowse >/dev/null
