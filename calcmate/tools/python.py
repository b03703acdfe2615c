"""MCP server ``python``: ``run_python(code)`` in the sandbox (MedMCP-Calc's ``python_executor``).

Each call runs in a fresh confined child of a warm worker (see ``calcmate.tools.sandbox`` for the
guarantees). Output is what the code prints; failures, time-outs and truncation come back as
tool errors with an explicit notice.

Run as a stdio server: ``python -m calcmate.tools.python [--workers N] [--wall-s S]``.
"""

from __future__ import annotations

import argparse
import asyncio

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from calcmate.tools.sandbox import SandboxLimits, SandboxPool, get_pool

PY_DOC = (
    "Run Python 3 code in a sandbox and return what it prints (use print()). math, statistics, "
    "numpy, datetime, fractions and decimal are available; no network, no files outside a temporary "
    "working directory, limited time and memory. Each call starts fresh: define everything you need."
)


def build_server(pool: SandboxPool | None = None, limits: SandboxLimits | None = None) -> MCPServer:
    """The ``python`` MCP server; by default on the process-wide warm pool."""
    server = MCPServer("python", instructions="Sandboxed Python execution.", log_level="WARNING")

    @server.tool(name="run_python", description=PY_DOC)
    async def run_python(code: str) -> str:
        if not isinstance(code, str) or not code.strip():
            raise ToolError("code is empty: pass Python source that prints its result")
        p = pool or get_pool()
        lim = limits or p.limits
        res = await asyncio.to_thread(p.run, code, lim)
        text = res.text(lim)
        if not res.ok:
            raise ToolError(text)
        return text

    return server


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="CalcMate python MCP server (stdio): sandboxed run_python.")
    p.add_argument("--workers", type=int, default=2, help="warm sandbox workers")
    p.add_argument("--wall-s", type=float, default=SandboxLimits.wall_s, help="wall-clock limit per call")
    p.add_argument("--cpu-s", type=int, default=SandboxLimits.cpu_s, help="CPU-time limit per call")
    p.add_argument("--mem-mb", type=int, default=SandboxLimits.mem_mb, help="address-space limit per call")
    p.add_argument("--max-chars", type=int, default=SandboxLimits.max_chars, help="output characters returned")
    a = p.parse_args(argv)
    limits = SandboxLimits(wall_s=a.wall_s, cpu_s=a.cpu_s, mem_mb=a.mem_mb, max_chars=a.max_chars)
    pool = SandboxPool(a.workers, limits)
    try:
        build_server(pool, limits).run("stdio")
    finally:
        pool.close()


if __name__ == "__main__":
    main()
