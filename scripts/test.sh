#!/usr/bin/env bash
# Run CalcMate's test suite. Creates/reuses .venv, installs the project (CPU torch), runs pytest.
# Extra arguments go to pytest, e.g.  scripts/test.sh -m slow  or  scripts/test.sh tests/test_units.py
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/_env.sh"
cd "$ROOT"
exec python -m pytest "$@"
