#!/usr/bin/env bash
# One command: install everything, then run the whole test suite (benchmarks live in bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/lint-imports
.venv/bin/mypy
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
