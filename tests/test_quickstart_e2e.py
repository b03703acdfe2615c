"""A shortened quickstart, end to end, exactly as a new user runs it (5 trajectories, 2 optimizer
steps, 2 eval tasks): registry → synthesis on embedded PostgreSQL → tiny Qwen3 → torchrun SFT
(ZeRO-3, SP=2, gloo) → evaluation of the checkpoint and of the oracle. A second run reuses it all."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(out: Path) -> subprocess.CompletedProcess:
    # A stale torch-extensions build lock (what an interrupted JIT build leaves behind) must not hang the
    # run: on CPU the trainer builds no DeepSpeed op at all.
    ext = out.parent / "torch_extensions"
    (ext / "py311_cpu" / "deepspeed_shm_comm").mkdir(parents=True, exist_ok=True)
    (ext / "py311_cpu" / "deepspeed_shm_comm" / "lock").touch()
    env = {**os.environ, "QS_OUT": str(out), "QS_TASKS": "5", "QS_STEPS": "2", "QS_EVAL_TASKS": "2",
           "TORCH_EXTENSIONS_DIR": str(ext)}
    return subprocess.run(["bash", str(ROOT / "scripts" / "quickstart.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)


def test_shortened_quickstart_runs_every_stage_and_is_idempotent(tmp_path):
    out = tmp_path / "qs"
    first = _run(out)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]

    mcb = json.loads((out / "medcalc_bench_report.json").read_text())
    assert mcb["overall"]["n"] > 200 and mcb["overall"]["accuracy"] > 0.85

    stats = json.loads((out / "data" / "stats.json").read_text())
    assert stats["tasks_attempted"] == 5 and stats["trajectories_kept"] >= 1
    rows = (out / "data" / "dataset" / "train.jsonl").read_text().splitlines()
    dropped = stats["over_length"]["dropped"]  # counted with the tiny model's tokenizer, never silently
    assert stats["over_length"]["method"] in (None, "tokenizer")
    assert len(rows) == stats["trajectories_kept"] - dropped >= 1

    metrics = [json.loads(l) for l in (out / "sft" / "metrics.jsonl").read_text().splitlines() if l.strip()]
    steps = [m for m in metrics if "loss" in m]
    assert [m["step"] for m in steps] == [1, 2]
    assert all(m["tokens_per_s"] > 0 for m in steps)
    assert (out / "sft" / "model.safetensors").is_file() and (out / "sft" / "calcmate_run.json").is_file()

    oracle_scores = json.loads((out / "eval-oracle" / "scores.json").read_text())
    oracle = oracle_scores["overall"]  # registry + tools only: QP is bounded by what the registry covers
    assert oracle["n_tasks"] == 2 and oracle["CS"] == 100.0 and oracle["EA"] > 80
    assert oracle["QP"] <= oracle_scores["coverage"]["share"] + 1e-6
    sft = json.loads((out / "eval-sft" / "scores.json").read_text())["overall"]
    assert sft["n_tasks"] == 2  # the tiny model's scores mean nothing; the stage must run
    assert (out / "eval-sft" / "report.md").is_file() and list((out / "eval-sft").glob("*.png"))

    text = first.stdout
    assert "MedMCP-Calc (overall, percent)" in text and "Stage wall times:" in text
    for stage in ("synthesize trajectories", "SFT (torchrun", "evaluate oracle", "evaluate tiny CalcMate checkpoint"):
        assert stage in text

    second = _run(out)
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]
    assert second.stdout.count("already done") == 6
