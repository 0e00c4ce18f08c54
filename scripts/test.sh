#!/usr/bin/env bash
# One command: install everything, then run the whole test suite (benchmarks live in bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/lint-imports
.venv/bin/mypy
# Two workers, a test file each at a time: most tests wait on a browser, a PTY or the network, so two
# keep both cores of a CI machine busy (each worker starts its own services; files keep their fixtures).
exec .venv/bin/python -m pytest -p no:cacheprovider -n "${BBROWSE_TEST_WORKERS:-2}" --dist loadfile "$@"
