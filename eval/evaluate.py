#!/usr/bin/env python
"""Evaluate a model (or the scripted oracle) on MedMCP-Calc-format tasks through the real tools.

    python eval/evaluate.py --config configs/eval/medmcp_calc.yaml --model PATH_OR_ID \\
        --tasks tests/fixtures/medmcp_calc/tasks_dev.jsonl --out runs/eval/base
    python eval/evaluate.py --config configs/eval/medmcp_calc.yaml --policy oracle --tasks ... --out ...
    python eval/evaluate.py ... --policy oracle --perturb drop_calculators=0.5 --perturb corrupt_values=0.25

Writes OUT/trajectories.jsonl (one line per finished task; a rerun skips them), OUT/scores.json,
OUT/report.md and OUT/metrics.png. Patients are materialized into the project's PostgreSQL
(embedded, or $CALCMATE_PG_DSN) unless --set ehr.dsn=... names an official MedMCP-Calc database.

One bad task never aborts the run: a task whose patient cannot be materialized, or whose episode crashes,
gets a trajectory saying why (``metadata.failure``, ``stop_reason``), scores 0, and is counted with its
reason in scores.json (``failures``) and report.md. A rerun retries materialization failures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.agent.runner import EvalConfig, evaluate  # noqa: E402
from calcmate.config import ConfigError, add_config_args, exit_on_config_error, flat_overrides, load_config  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(p)
    p.add_argument("--model", help="checkpoint path or model id (sets backend.model)")
    p.add_argument("--tasks", help="tasks.jsonl in the MedMCP-Calc format (sets tasks)")
    p.add_argument("--policy", choices=["model", "oracle"], help="who acts: the model, or the scripted oracle")
    p.add_argument("--protocol", choices=["native", "react_json"], help="native (Qwen3 tool calls) or react_json (the paper's)")
    p.add_argument("--backend", choices=["vllm", "openai", "transformers"], help="sets backend.kind")
    p.add_argument("--limit", type=int, help="evaluate only the first N tasks")
    p.add_argument("--perturb", action="append", default=[], metavar="KEY=VALUE",
                   help="oracle perturbation: drop_calculators=FRACTION, corrupt_values=FRACTION, skip_sql=true, seed=N")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = flat_overrides(args)
    for key, flag in (("backend.model", args.model), ("tasks", args.tasks), ("policy", args.policy),
                      ("protocol", args.protocol), ("backend.kind", args.backend), ("limit", args.limit)):
        if flag is not None:
            overrides.append(f"{key}={flag}")
    overrides += [f"perturb.{kv}" for kv in args.perturb]
    try:
        cfg = load_config(args.config, overrides, EvalConfig)
    except ConfigError as e:
        exit_on_config_error(e)
    if cfg.policy == "model" and not cfg.backend.model:
        exit_on_config_error(ConfigError("backend.model: give --model PATH_OR_ID (or use --policy oracle)"))
    if args.out is None:
        exit_on_config_error(ConfigError("--out: an output directory is required"))
    try:
        scores = evaluate(cfg, args.out, show_progress=not args.quiet)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({**{k: scores["overall"].get(k) for k in ("n_tasks", "TF", "CS", "EA", "QP")},
                      "failed_tasks": scores.get("failures", {}).get("count", 0)}))
    for f in scores.get("failures", {}).get("tasks", []):
        print(f"task {f['task_id']} failed ({f['stage']}): {f['reason']}", file=sys.stderr)
    print(f"wrote {args.out}/scores.json, {args.out}/report.md, {args.out}/trajectories.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
