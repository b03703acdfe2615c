#!/usr/bin/env python
"""Evaluate every checkpoint matching a glob, skipping those already done, then write a
leaderboard (markdown + CSV) and a metric-versus-step plot.

    python eval/sweep.py --checkpoints 'runs/calcmate-4b/checkpoint-*' \\
        --config configs/eval/medmcp_calc.yaml --out runs/calcmate-4b/sweep [--set concurrency=64]

Each checkpoint runs in its own ``eval/evaluate.py`` process, so each gets a fresh vLLM engine
and its GPU memory is released before the next one. A checkpoint whose OUT/<name>/scores.json
covers every task is skipped; a half-finished one resumes from its trajectories.jsonl.
On SLURM, run one checkpoint per array task with ``--index $SLURM_ARRAY_TASK_ID`` and a final
``--leaderboard-only`` step.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calcmate.config import add_config_args, flat_overrides  # noqa: E402
from calcmate.report import leaderboard_rows, write_leaderboard  # noqa: E402


def step_of(path: str) -> int | None:
    m = re.search(r"(?:checkpoint|step|global_step)[-_]?(\d+)", Path(path).name)
    return int(m.group(1)) if m else None


def find_checkpoints(pattern: str) -> list[str]:
    paths = [p for p in glob.glob(pattern) if Path(p).is_dir()]
    return sorted(paths, key=lambda p: (step_of(p) is None, step_of(p) or 0, p))


def is_done(run_dir: Path) -> bool:
    f = run_dir / "scores.json"
    if not f.exists():
        return False
    s = json.loads(f.read_text())
    return s.get("run", {}).get("missing_trajectories", 1) == 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(p)
    p.add_argument("--checkpoints", required=True, help="glob of checkpoint directories (quote it)")
    p.add_argument("--tasks", help="tasks.jsonl (default: the config's)")
    p.add_argument("--index", type=int, help="evaluate only the checkpoint at this index (SLURM array task)")
    p.add_argument("--leaderboard-only", action="store_true", help="only collect finished runs into the leaderboard")
    args = p.parse_args(argv)
    if args.out is None:
        p.error("--out is required")
    ckpts = find_checkpoints(args.checkpoints)
    if not ckpts:
        print(f"error: no checkpoint directories match {args.checkpoints!r}", file=sys.stderr)
        return 2
    chosen = [ckpts[args.index]] if args.index is not None else ckpts
    if not args.leaderboard_only:
        for ck in chosen:
            run_dir = args.out / Path(ck).name
            if is_done(run_dir):
                print(f"skip {ck}: {run_dir}/scores.json is complete")
                continue
            cmd = [sys.executable, str(ROOT / "eval" / "evaluate.py"), "--model", ck, "--out", str(run_dir),
                   "--set", f"name={Path(ck).name}", *flat_overrides(args)]
            if args.config:
                cmd += ["--config", str(args.config)]
            if args.tasks:
                cmd += ["--tasks", args.tasks]
            print("running", " ".join(cmd), flush=True)
            rc = subprocess.call(cmd)
            if rc != 0:
                print(f"warning: {ck} failed with exit code {rc}; its partial run resumes next time", file=sys.stderr)
    runs = []
    for ck in ckpts:
        f = args.out / Path(ck).name / "scores.json"
        if f.exists():
            runs.append((Path(ck).name, step_of(ck), json.loads(f.read_text())))
    rows = leaderboard_rows(runs)
    write_leaderboard(args.out, rows)
    print(f"leaderboard of {len(rows)} checkpoint(s): {args.out}/leaderboard.md, leaderboard.csv, metrics_vs_step.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
