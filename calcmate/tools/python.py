"""MCP server ``python_executor``: ``run_python(code)`` in the sandbox (MedMCP-Calc's ``python_executor``).

Each call runs in a fresh confined child of a warm worker (see ``calcmate.tools.sandbox`` for the
guarantees). By default (``fmt="official"``) the observation is the official server's:
``"Output:\n<stdout>"``, then ``"Errors/Warnings:\n<stderr>"``, or "Code executed successfully (no
output).", its time-out sentence and its keyword refusal, all as plain strings. ``fmt="calcmate"``
returns the merged output, and failures, time-outs and truncation as tool errors with a notice.

Run as a stdio server: ``python -m calcmate.tools.python [--workers N] [--wall-s S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from calcmate.tools import official
from calcmate.tools.sandbox import SandboxLimits, SandboxPool, get_pool

PY_DOC = (
    "Run Python 3 code in a sandbox and return what it prints (use print()). math, statistics, "
    "numpy, datetime, fractions and decimal are available; no network, no files outside a temporary "
    "working directory, limited time and memory. Each call starts fresh: define everything you need."
)


def build_server(pool: SandboxPool | None = None, limits: SandboxLimits | None = None,
                 fmt: official.ToolFormat = "official") -> MCPServer:
    """The ``python_executor`` MCP server; by default on the process-wide warm pool."""
    server = MCPServer(official.PYTHON, log_level="WARNING")

    async def run(code: str):
        p = pool or get_pool()
        lim = limits or p.limits
        return await asyncio.to_thread(p.run, code, lim), lim

    if fmt == "official":
        @server.tool(name="run_python", description=official.RUN_PYTHON_DOC)
        async def run_python(code: str) -> str:
            for kw in official.PY_FORBIDDEN:
                if kw in code:
                    return official.PY_SECURITY.format(kw)
            res, lim = await run(code)
            if res.timed_out:
                return official.PY_TIMEOUT
            notes = []
            if res.truncated:
                notes.append(f"[output truncated: {res.output_bytes} bytes produced, showing the first {lim.max_chars} characters]")
            if res.signal and not res.timed_out:
                notes.append(f"[killed by {res.signal}: a sandbox limit (CPU {lim.cpu_s} s, memory {lim.mem_mb} MB, output) was exceeded]")
            return official.python_output(res.output, "\n".join([res.stderr, *notes]))
    elif fmt == "calcmate":
        @server.tool(name="run_python", description=PY_DOC)
        async def run_python_calcmate(code: str) -> str:
            if not isinstance(code, str) or not code.strip():
                raise ToolError("code is empty: pass Python source that prints its result")
            res, lim = await run(code)
            text = res.text(lim)
            if not res.ok:
                raise ToolError(text)
            return text
    else:
        raise ValueError(f"tools.format: unknown {fmt!r}; choose one of {official.FORMATS}")

    return server


class StartingPool:
    """The warm pool, started in a background thread: a stdio server answers ``list_tools`` while its
    workers import numpy, and the first ``run_python`` waits for them."""

    def __init__(self, workers: int, limits: SandboxLimits):
        import threading

        self.limits = limits
        self._pool: SandboxPool | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, args=(workers, limits), daemon=True)
        self._thread.start()

    def _start(self, workers: int, limits: SandboxLimits) -> None:
        try:
            self._pool = SandboxPool(workers, limits)
        except BaseException as e:  # reported on first use
            self._error = e

    @property
    def pool(self) -> SandboxPool:
        self._thread.join()
        if self._pool is None:
            raise RuntimeError(f"the sandbox pool failed to start: {self._error}")
        return self._pool

    def run(self, code: str, limits: SandboxLimits | None = None):
        return self.pool.run(code, limits)

    def close(self) -> None:
        self._thread.join()
        if self._pool is not None:
            self._pool.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="CalcMate python_executor MCP server (stdio): sandboxed run_python.")
    p.add_argument("--workers", type=int, default=2, help="warm sandbox workers")
    p.add_argument("--wall-s", type=float, default=SandboxLimits.wall_s, help="wall-clock limit per call")
    p.add_argument("--cpu-s", type=int, default=SandboxLimits.cpu_s, help="CPU-time limit per call")
    p.add_argument("--mem-mb", type=int, default=SandboxLimits.mem_mb, help="address-space limit per call")
    p.add_argument("--max-chars", type=int, default=SandboxLimits.max_chars, help="output characters returned")
    p.add_argument("--format", choices=official.FORMATS, default=os.environ.get("CALCMATE_TOOLS_FORMAT", "official"),
                   help="observation format: the official MedMCP-Calc server's (default) or CalcMate's richer one")
    a = p.parse_args(argv)
    limits = SandboxLimits(wall_s=a.wall_s, cpu_s=a.cpu_s, mem_mb=a.mem_mb, max_chars=a.max_chars)
    pool = StartingPool(a.workers, limits)
    try:
        build_server(pool, limits, a.format).run("stdio")
    finally:
        pool.close()


if __name__ == "__main__":
    main()
