#!/usr/bin/env bash
# One command: install everything, then run the whole test suite (benchmarks live in bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The suite starts hundreds of Python processes (services, commands, pytest's workers): each module is compiled
# once and its bytecode kept, pytest's rewritten test plugins included, even where the environment says not to.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/ruff check .
.venv/bin/lint-imports
# Meanwhile, in the background and behind the tests (niced: they use the CPU the tests leave): the type check, and
# does the install resolve to wheels on macOS and Linux, arm and x86 (scripts/check_install.py; skipped with a
# message when the package index cannot be reached)?
mypy_log=$(mktemp)
nice -n 10 .venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_check=$!
install_log=$(mktemp)
nice -n 10 .venv/bin/python scripts/check_install.py >"$install_log" 2>&1 &
install_check=$!
# Every worker imports every test module, and pytest rewrites each one's asserts on import: one collection first
# writes the rewritten modules once (beside the type check), where the workers would each rewrite them all at once.
.venv/bin/python -m pytest -p no:cacheprovider --collect-only -q "$@" >/dev/null 2>&1 || true
# Two workers a core, a test file each at a time: the tests wait on browsers, PTYs, timeouts and the network for
# much of their time, which fewer workers leave idle (each worker starts its own services; files keep their
# fixtures). More would starve a slower machine's tests (docs/decisions.md). At most eight: each worker's
# services and Chromiums take memory.
# Files are handed out in collection order, the slowest first (tests/conftest.py SLOW_FILES), not by
# their number of tests: a long file started last would run alone at the end.
workers=$(( $(getconf _NPROCESSORS_ONLN) * 2 ))
[ "$workers" -le 8 ] || workers=8
status=0
.venv/bin/python -m pytest -p no:cacheprovider -n "${BBROWSE_TEST_WORKERS:-$workers}" --dist loadfile --no-loadscope-reorder \
  "$@" || status=$?
# A background check: its output, and its failure counted as the command's (after the tests' own).
finish() {
  local code=0
  wait "$1" || code=$?
  cat "$2"
  rm -f "$2"
  if [ "$code" != 0 ]; then
    echo "$3 (above)" >&2
    [ "$status" != 0 ] || status=$code
  fi
}
finish "$mypy_check" "$mypy_log" "type check failed"
finish "$install_check" "$install_log" "install check failed: bbrowse does not resolve to wheels on every platform"
exit "$status"
