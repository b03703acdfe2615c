#!/usr/bin/env python
"""Synthesis throughput, measured by hand (never in tests).

1. Verified trajectories per second with the scripted teacher (the oracle policy), end to end:
   task creation, materialization into embedded PostgreSQL, episodes through the in-process MCP
   tools, verification, export. Reported per stage too.
2. How the LLM-teacher path scales with teacher concurrency: the planner client against a local
   OpenAI-compatible server that answers instantly (calcmate.synth.instant_server), so only the
   pipeline (HTTP client, semaphore, retries, rule checks) is measured.

    python benchmarks/bench_synth.py [--tasks 40] [--planner-tasks 64] [--concurrency 1 4 16 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.config import load_config  # noqa: E402
from calcmate.synth.pipeline import SynthConfig, create_tasks, export_and_report, run_episodes  # noqa: E402


def scripted(n: int, concurrency: int) -> dict:
    from calcmate.ehr import get_server

    get_server()  # start PostgreSQL outside the timed region, as a long run amortises it
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        cfg = load_config(Path(__file__).parents[1] / "configs/synth/offline.yaml",
                          [f"num_tasks={n}", f"concurrency={concurrency}", "progress=false", f"batch_size={n}"], SynthConfig)
        t0 = time.perf_counter()
        tasks = asyncio.run(create_tasks(cfg, out))
        t1 = time.perf_counter()
        asyncio.run(run_episodes(cfg, out, tasks))
        t2 = time.perf_counter()
        stats = export_and_report(cfg, out)
        t3 = time.perf_counter()
    kept = stats["trajectories_kept"]
    return {"tasks": n, "created": len(tasks), "kept": kept, "episode_concurrency": concurrency,
            "create_s": round(t1 - t0, 2), "episodes_s": round(t2 - t1, 2), "export_s": round(t3 - t2, 2),
            "total_s": round(t3 - t0, 2), "verified_per_s": round(kept / (t3 - t0), 3),
            "episodes_per_s": round(len(tasks) / (t2 - t1), 3), "rejected_by_reason": stats["rejected_by_reason"]}


def planner(n: int, concurrency: int) -> dict:
    from calcmate.synth.instant_server import InstantServer

    with InstantServer() as srv, tempfile.TemporaryDirectory() as d:
        cfg = load_config(None, [f"num_tasks={n}", "progress=false", "teacher.kind=llm", "teacher.planner.model=instant",
                                 f"teacher.planner.base_url={srv.base_url}", f"teacher.planner.concurrency={concurrency}",
                                 f"concurrency={concurrency}"], SynthConfig)
        t0 = time.perf_counter()
        tasks = asyncio.run(create_tasks(cfg, Path(d)))
        dt = time.perf_counter() - t0
        return {"concurrency": concurrency, "tasks": len(tasks), "requests": srv.requests, "s": round(dt, 2),
                "tasks_per_s": round(len(tasks) / dt, 2), "requests_per_s": round(srv.requests / dt, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--episode-concurrency", type=int, default=8)
    ap.add_argument("--planner-tasks", type=int, default=64)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    args = ap.parse_args()
    res = {"cpus": os.cpu_count(), "scripted": scripted(args.tasks, args.episode_concurrency),
           "planner_vs_concurrency": [planner(args.planner_tasks, c) for c in args.concurrency]}
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
