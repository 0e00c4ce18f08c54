#!/usr/bin/env bash
# One command: install everything, then launch bbrowse on the embedded local service.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/bbrowse "$@"
