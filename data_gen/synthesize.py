#!/usr/bin/env python
"""Synthesize verified, tool-augmented training trajectories (MedMCP-Calc style) for SFT.

    python data_gen/synthesize.py --config configs/synth/offline.yaml --out runs/quickstart/data --set num_tasks=50
    python data_gen/synthesize.py --config configs/synth/calcmate.yaml --out runs/synth --set num_tasks=1000
    python data_gen/synthesize.py ... --decontaminate path/to/benchmark_tasks.jsonl      # drop overlapping tasks
    python data_gen/synthesize.py ... --set shard=0 num_shards=4                         # one of 4 processes

Writes, under OUT:
  dataset/train.jsonl, dataset/train.parquet   the SFT dataset (messages + tools + metadata; TRL-ready)
  tasks/tasks.jsonl                            every task, MedMCP-Calc format + plan metadata
  trajectories/trajectories.jsonl              one outcome per task: kept (with trajectory) or rejected (reasons)
  heldout/tasks.jsonl                          held-out tasks for eval/evaluate.py (heldout_fraction > 0)
  stats.json, report.md, synthesis_stats.png   counts, rejection reasons, averages, plots
Rerunning with the same OUT resumes: finished tasks and trajectories are not redone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.config import ConfigError, add_config_args, exit_on_config_error, flat_overrides, load_config  # noqa: E402
from calcmate.synth.pipeline import SynthConfig, synthesize  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(p)
    p.add_argument("--num-tasks", type=int, help="number of tasks to synthesize (sets num_tasks)")
    p.add_argument("--decontaminate", nargs="+", default=[], metavar="FILE",
                   help="benchmark tasks.jsonl files; synthesized tasks overlapping them (n-grams, patients) are dropped")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = flat_overrides(args)
    if args.num_tasks is not None:
        overrides.append(f"num_tasks={args.num_tasks}")
    if args.quiet:
        overrides.append("progress=false")
    try:
        cfg = load_config(args.config, overrides, SynthConfig)
    except ConfigError as e:
        exit_on_config_error(e)
    if args.decontaminate:
        missing = [f for f in args.decontaminate if not Path(f).is_file()]
        if missing:
            exit_on_config_error(ConfigError(f"--decontaminate: no such file {missing[0]!r}"))
        cfg.decontaminate = [*cfg.decontaminate, *args.decontaminate]
    if args.out is None:
        exit_on_config_error(ConfigError("--out: an output directory is required"))
    stats = synthesize(cfg, args.out)
    print(json.dumps({k: stats[k] for k in ("tasks_attempted", "trajectories_kept", "rejected_by_reason")}))
    print(f"dataset: {args.out}/dataset/{cfg.export.split}.jsonl (+ .parquet); "
          f"report: {args.out}/report.md; stats: {args.out}/stats.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
