#!/usr/bin/env python
"""Harness overhead per agent step and tasks/s, with the oracle policy on the dev tasks, at
concurrency 1, 8 and 64. Run by hand:  python benchmarks/bench_eval.py [--repeat 6]

Two settings, both through the same Episode loop, protocol and oracle:
  * real   -- the real MCP tools (in-process) over PostgreSQL with the dev patients materialized;
  * null   -- tools that answer instantly, so what remains is the harness itself (loop,
              protocol rendering/parsing, trajectory record, oracle planning).
"Harness overhead per step" = (episode wall time - time inside tool calls) / steps.
The dev tasks are repeated (--repeat) with distinct ids so 64 episodes can be in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.agent.oracle import OraclePolicy  # noqa: E402
from calcmate.agent.runner import EvalConfig, open_environment, run_tasks  # noqa: E402
from calcmate.agent.tools import ToolSpec  # noqa: E402
from calcmate.tasks import read_tasks  # noqa: E402

DEV = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl"


class NullTools:
    """Instant tools with the real tool names and schemas."""

    def __init__(self, specs):
        self.specs = specs

    async def list_tools(self):
        return self.specs

    async def call(self, server, tool, arguments):
        return ("calcmate://calculators/x" if tool == "search" else "ok"), False


async def measure(tasks, tools, reports, concurrency, protocol):
    cfg = EvalConfig(policy="oracle", protocol=protocol, concurrency=concurrency)
    trajs = []
    t0 = time.perf_counter()
    await run_tasks(tasks, lambda t: OraclePolicy(), tools, cfg, reports, trajs.append)
    wall = time.perf_counter() - t0
    steps = sum(t.rounds for t in trajs)
    tool_s = sum(c.latency_s for t in trajs for c in t.tool_calls)
    ep_s = sum(t.wall_s for t in trajs)
    return {"concurrency": concurrency, "tasks": len(trajs), "steps": steps, "wall_s": round(wall, 3),
            "tasks_per_s": round(len(trajs) / wall, 2), "steps_per_s": round(steps / wall, 1),
            "harness_ms_per_step": round(1000 * (ep_s - tool_s) / steps, 3) if concurrency == 1 else None,
            "tool_ms_per_call": round(1000 * tool_s / max(1, sum(len(t.tool_calls) for t in trajs)), 2)}


async def main_async(args):
    base = read_tasks(DEV)
    tasks = [t.model_copy(update={"task_id": f"{t.task_id}#{i}"}) for i in range(args.repeat) for t in base]
    rows = []
    cfg = EvalConfig(policy="oracle", tasks=str(DEV))
    async with open_environment(cfg, base) as (tools, reports):
        reports = {t.task_id: reports[t.task_id.split("#")[0]] for t in tasks}
        specs = [ToolSpec(s.server, s.name, s.description, s.input_schema) for s in await tools.list_tools()]
        for setting, tb in (("real", tools), ("null", NullTools(specs))):
            for c in args.concurrency:
                n = len(base) if c == 1 and setting == "real" else len(tasks)
                r = await measure(tasks[:n], tb, reports, c, args.protocol)
                rows.append({"setting": setting, **r})
                print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=6, help="copies of the dev tasks (12 each)")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    p.add_argument("--protocol", choices=["native", "react_json"], default="native")
    args = p.parse_args()
    rows = asyncio.run(main_async(args))
    print("\n| setting | concurrency | tasks | steps | tasks/s | steps/s | harness ms/step (c=1) | tool ms/call |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['setting']} | {r['concurrency']} | {r['tasks']} | {r['steps']} | {r['tasks_per_s']} | "
              f"{r['steps_per_s']} | {r['harness_ms_per_step'] or '–'} | {r['tool_ms_per_call']} |")


if __name__ == "__main__":
    main()
