#!/usr/bin/env bash
# Run CalcMate's test suite. Creates/reuses .venv, installs the project (CPU torch), runs pytest.
# Extra arguments go to pytest, e.g.  scripts/test.sh -m slow  or  scripts/test.sh tests/test_units.py
# With no arguments the suite runs on every core (pytest-xdist, one module per worker so each module
# keeps its one database); CALCMATE_TEST_WORKERS=1 runs it in one process.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/_env.sh"
cd "$ROOT"
if [ "$#" -eq 0 ]; then
  WORKERS="${CALCMATE_TEST_WORKERS:-$(nproc)}"
  [ "$WORKERS" -gt 1 ] && set -- -n "$WORKERS" --dist loadfile --durations=15
fi
exec python -m pytest "$@"
