#!/usr/bin/env bash
# CalcMate quickstart: the whole recipe on a laptop CPU with embedded defaults.
#
#   1. install into .venv          4. synthesize verified trajectories (scripted teacher, embedded
#   2. registry on MedCalc-Bench      PostgreSQL, official tools), counted with the tiny tokenizer
#   3. build a tiny Qwen3 locally  5. SFT: torchrun, 2 CPU processes, ZeRO-3 + Ulysses SP=2 (gloo)
#      (no hub download)           6. evaluate the checkpoint on the dev MedMCP-Calc tasks, next to
#                                     the oracle policy (registry + tools only: its honest coverage)
#
# Idempotent: a second run reuses finished stages (delete runs/quickstart to start over).
# Sizes can be shrunk for CI: QS_TASKS (50), QS_STEPS (6), QS_EVAL_TASKS (all dev tasks), QS_OUT.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/_env.sh"
cd "$ROOT"

OUT="${QS_OUT:-$ROOT/runs/quickstart}"
TASKS="${QS_TASKS:-50}"
STEPS="${QS_STEPS:-6}"
EVAL_TASKS="${QS_EVAL_TASKS:-0}"   # 0 = all
DEV_TASKS="$ROOT/tests/fixtures/medmcp_calc/tasks_dev.jsonl"
DEV_CSV="$ROOT/tests/fixtures/medcalc_bench/dev_relabelled.csv"
mkdir -p "$OUT"
TIMES="$OUT/stage_times.tsv"
: > "$TIMES"

# Every stage starts and stops its own embedded PostgreSQL. On Ctrl-C the running stage gets SIGTERM
# (Python stages stop their servers on it; torchrun forwards it to its workers) and we wait for it.
CHILD=""
cleanup() {
  trap - INT TERM
  echo; echo "[quickstart] interrupted; stopping the running stage"
  if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null || true; wait "$CHILD" 2>/dev/null || true; fi
  exit 130
}
trap cleanup INT TERM

stage() {  # stage NAME DONE_MARKER CMD...
  local name="$1" marker="$2"; shift 2
  if [ -e "$marker" ]; then
    echo "[quickstart] $name: already done ($marker)"; printf '%s\t%s\n' "$name" "reused" >> "$TIMES"; return
  fi
  echo "[quickstart] $name: $*"
  local t0; t0=$(date +%s%N)
  "$@" &
  CHILD=$!
  wait "$CHILD"
  CHILD=""
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s\t%d.%01d s\n' "$name" $((ms / 1000)) $(((ms % 1000) / 100)) >> "$TIMES"
}

stage "registry on MedCalc-Bench dev" "$OUT/medcalc_bench_report.json" \
  python eval/medcalc_bench.py --solver registry --csv "$DEV_CSV" --out "$OUT/medcalc_bench_report.json"

stage "build tiny Qwen3" "$OUT/tiny-qwen3/config.json" \
  python scripts/build_tiny_model.py --out "$OUT/tiny-qwen3"

# rows are counted with the training tokenizer and chat template; longer ones are dropped and counted.
# 3-5 calculators per task keep the CPU run's rows under its 32k context (the real recipe: ~9 per task)
stage "synthesize trajectories" "$OUT/data/stats.json" \
  python data_gen/synthesize.py --config configs/synth/offline.yaml --out "$OUT/data" --set num_tasks="$TASKS" \
    min_calculators=3 max_calculators=5 export.tokenizer="$OUT/tiny-qwen3" export.max_length=32768

stage "SFT (torchrun, 2 processes, ZeRO-3, SP=2)" "$OUT/sft/model.safetensors" \
  torchrun --standalone --nproc_per_node 2 train/sft.py --config configs/tiny-cpu.yaml \
    --set model_name_or_path="$OUT/tiny-qwen3" dataset_path="$OUT/data/dataset" \
          output_dir="$OUT/sft" max_steps="$STEPS"

LIMIT=()
[ "$EVAL_TASKS" != "0" ] && LIMIT=(--limit "$EVAL_TASKS")
stage "evaluate oracle (registry + tools, honest coverage)" "$OUT/eval-oracle/scores.json" \
  python eval/evaluate.py --config configs/eval/oracle.yaml \
    --tasks "$DEV_TASKS" --out "$OUT/eval-oracle" "${LIMIT[@]}"
stage "evaluate tiny CalcMate checkpoint" "$OUT/eval-sft/scores.json" \
  python eval/evaluate.py --config configs/eval/medmcp_calc_cpu.yaml --model "$OUT/sft" \
    --tasks "$DEV_TASKS" --out "$OUT/eval-sft" "${LIMIT[@]}"

python -m calcmate.report "$OUT/eval-sft/scores.json" "$OUT/eval-oracle/scores.json" --names "tiny CalcMate (quickstart)" "oracle (registry coverage)"
echo
echo "Stage wall times:"; while IFS=$'\t' read -r n t; do printf '  %-45s %s\n' "$n" "$t"; done < "$TIMES"
echo
echo "Reports: $OUT/eval-sft/report.md  $OUT/eval-oracle/report.md"
echo "Plots:   $(ls "$OUT"/eval-*/*.png 2>/dev/null | tr '\n' ' ')"
echo "Data:    $OUT/data/dataset (stats: $OUT/data/stats.md)"
echo "(The tiny model's scores mean nothing clinically; the point is that every stage runs for real.)"
