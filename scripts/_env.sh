#!/usr/bin/env bash
# Shared by the entry scripts: create or reuse the repo's virtualenv and install CalcMate into it.
# torch is pinned first so pip takes the CPU wheel instead of pulling a CUDA build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CALCMATE_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[calcmate] creating virtualenv at $VENV"
  "$PY" -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
STAMP="$VENV/.calcmate-installed"
HASH="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$HASH" ]; then
  echo "[calcmate] installing dependencies (first run takes a few minutes)"
  python -m pip install -q --upgrade pip
  python -m pip install -q "torch==2.13.0"
  python -m pip install -q -e "$ROOT[dev]"
  echo "$HASH" > "$STAMP"
fi
export DS_ACCELERATOR="${DS_ACCELERATOR:-cpu}"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
export WANDB_MODE="${WANDB_MODE:-offline}"
export TOKENIZERS_PARALLELISM=false
