"""Tool latency: each stdio server's start-up (spawn to its ``list_tools`` answer), and p50/p95 of
every tool in-process and over stdio, in the official observation format (the default) and in
CalcMate's richer one, next to two baselines (a raw psycopg query on the same database, and a bare
``python -c`` spawn), all in one run.

    python benchmarks/bench_tools.py [--n 50] [--out DIR]

Starts its own embedded PostgreSQL (or uses $CALCMATE_PG_DSN), materializes the dev tasks, and
prints a markdown table (also written to DIR/bench_tools.md and .json when --out is given).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def timed(n: int, fn) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


async def atimed(n: int, fn) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50, help="calls per measurement")
    ap.add_argument("--out", type=Path, help="write bench_tools.md/.json here")
    a = ap.parse_args()

    import psycopg
    from rich.progress import track

    from calcmate.ehr import start_server
    from calcmate.ehr.materialize import materialize
    from calcmate.tasks import read_tasks
    from calcmate.tools import Toolbox

    server = start_server()
    db = server.create_database("bench_tools")
    tasks = read_tasks(ROOT / "tests/fixtures/medmcp_calc/tasks_dev.jsonl")
    with db.connect() as conn:
        reports = [materialize(t, conn, seed=0) for t in tasks]
    lab = next(p for r in reports for p in r.placed if p.kind == "lab")
    calls = {
        "run_read_only_sql": ("postgres_executor", "run_read_only_sql", {"query": lab.query}),
        "list_tables": ("postgres_executor", "list_tables", {}),
        "describe_tables": ("postgres_executor", "describe_tables", {"table_names": ["laboratory_result", "vital_signs"]}),
        "search": ("google_search", "search", {"query": "serum osmolality sodium glucose BUN"}),
        "fetch": ("google_search", "fetch", {"url": "calcmate://calculators/abg_analyzer"}),
        "run_python": ("python_executor", "run_python", {"code": "import numpy as np\nprint(round(float(np.log(2.0)), 4))"}),
    }
    modes = [(f"{t} {f}", t, f) for f in ("official", "calcmate") for t in ("in-process", "stdio")]
    rows: dict[str, dict[str, list[float]]] = {k: {} for k in calls}

    async def bench(mode: str, tb: Toolbox) -> None:
        async with tb:
            for name, (srv, tool, args) in track(list(calls.items()), description=f"{mode:20s}"):
                for _ in range(3):  # warm-up
                    text, err = await tb.call(srv, tool, args)
                    assert not err and "Error" not in text[:40], (name, text)
                rows[name][mode] = await atimed(a.n, lambda: tb.call(srv, tool, args))

    async def startup(fmt: str) -> dict[str, list[float]]:
        """Seconds from spawning each stdio server to its list_tools answer (a fresh process each time)."""
        out: dict[str, list[float]] = {}
        for srv in ("postgres_executor", "google_search", "python_executor"):
            out[srv] = []
            for _ in range(max(3, a.n // 10)):
                t = time.perf_counter()
                async with Toolbox.stdio(db.ro_dsn, servers=(srv,), fmt=fmt) as tb:
                    await tb.list_tools()
                    out[srv].append(time.perf_counter() - t)
        return out

    async def bare_startup() -> list[float]:
        """The floor: a stdio MCP server with no tools and no imports of ours (spawn + SDK import + list_tools)."""
        from mcp import Client, StdioServerParameters

        params = StdioServerParameters(command=sys.executable, args=[
            "-c", "from mcp.server.mcpserver import MCPServer; MCPServer('bare').run('stdio')"])
        out = []
        for _ in range(max(3, a.n // 10)):
            t = time.perf_counter()
            async with Client(params) as c:
                await c.list_tools()
                out.append(time.perf_counter() - t)
        return out

    for mode, transport, fmt in modes:
        tb = Toolbox.stdio(db.ro_dsn, fmt=fmt) if transport == "stdio" else Toolbox.in_process(db.ro_dsn, fmt=fmt)
        asyncio.run(bench(mode, tb))
    starts = {fmt: asyncio.run(startup(fmt)) for fmt in ("official", "calcmate")}
    bare = asyncio.run(bare_startup())
    with psycopg.connect(db.ro_dsn) as conn:
        conn.execute(lab.query).fetchall()
        base_sql = timed(a.n, lambda: conn.execute(lab.query).fetchall())
    base_py = timed(max(5, a.n // 5), lambda: subprocess.run(
        [sys.executable, "-c", "import numpy as np; print(round(float(np.log(2.0)), 4))"], check=True, capture_output=True))
    server.drop_database(db.name)
    server.stop()

    ms = lambda x: f"{1000 * x:.2f}"  # noqa: E731
    head = " | ".join(f"{m} p50 / p95 (ms)" for m, _, _ in modes)
    lines = [f"| tool | {head} |", "|---|" + "---|" * len(modes)]
    for name, r in rows.items():
        lines.append(f"| {name} | " + " | ".join(f"{ms(pct(r[m], .5))} / {ms(pct(r[m], .95))}" for m, _, _ in modes) + " |")
    lines.append(f"| baseline: raw psycopg query | {ms(pct(base_sql, .5))} / {ms(pct(base_sql, .95))} |" + " |" * (len(modes) - 1))
    lines.append(f"| baseline: `python -c` spawn (numpy) | {ms(pct(base_py, .5))} / {ms(pct(base_py, .95))} |" + " |" * (len(modes) - 1))
    lines += ["", "| stdio server start-up (spawn → list_tools), s | official p50 / max | calcmate p50 / max |", "|---|---|---|"]
    for srv in starts["official"]:
        o, c = starts["official"][srv], starts["calcmate"][srv]
        lines.append(f"| {srv} | {pct(o, .5):.2f} / {max(o):.2f} | {pct(c, .5):.2f} / {max(c):.2f} |")
    lines.append(f"| baseline: a bare MCP server (no tools) | {pct(bare, .5):.2f} / {max(bare):.2f} | |")
    table = "\n".join(lines)
    print(table)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "bench_tools.md").write_text(table + "\n")
        data = {k: {m: {"p50": pct(v, .5), "p95": pct(v, .95), "mean": statistics.mean(v)} for m, v in r.items()} for k, r in rows.items()}
        data["startup_s"] = {f: {k: {"p50": pct(v, .5), "max": max(v)} for k, v in d.items()} for f, d in starts.items()}
        data["startup_s"]["bare_mcp_server"] = {"p50": pct(bare, .5), "max": max(bare)}
        data["baseline_psycopg"] = {"p50": pct(base_sql, .5), "p95": pct(base_sql, .95)}
        data["baseline_python_spawn"] = {"p50": pct(base_py, .5), "p95": pct(base_py, .95)}
        (a.out / "bench_tools.json").write_text(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
