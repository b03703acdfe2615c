"""``Toolbox``: the three MCP servers behind one interface, in-process or over stdio.

    tb = Toolbox.in_process(dsn=db.ro_dsn)          # fast: mcp.Client(server) in this process
    tb = Toolbox.stdio(dsn=db.ro_dsn)               # real subprocesses from configs/tools/servers.json
    async with tb:
        specs = await tb.list_tools()               # [ToolSchema(server, name, description, input_schema)]
        text, is_error = await tb.call("postgres_executor", "run_read_only_sql", {"query": "SELECT 1"})

Both go through the real ``mcp`` client, so the agent sees byte-identical observations either
way. Servers carry the official harness's names (``postgres_executor``, ``google_search``,
``python_executor``) and, by default, its tool names and observation formats (``fmt="official"``,
see ``calcmate.tools.official``); ``fmt="calcmate"`` selects CalcMate's richer formats. CalcMate's
older server names (``postgres``, ``reference``, ``python``) are accepted as aliases, and a call
may name only the tool.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from calcmate.tools.official import FORMATS, POSTGRES, PYTHON, SEARCH, ToolFormat

SERVERS = (POSTGRES, SEARCH, PYTHON)
SERVER_ALIASES = {"postgres": POSTGRES, "reference": SEARCH, "python": PYTHON, "sql": POSTGRES, "search": SEARCH}
ENV_TOOLS_FORMAT = "CALCMATE_TOOLS_FORMAT"
DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "tools" / "servers.json"


@dataclass(frozen=True)
class ToolSchema:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"tools.format: unknown {fmt!r}; choose one of {', '.join(FORMATS)}")


@lru_cache(maxsize=1)
def _shared_reference_index():
    from calcmate.tools.reference import ReferenceIndex

    return ReferenceIndex()


def load_servers_config(path: str | Path = DEFAULT_CONFIG, env: dict[str, str] | None = None) -> dict[str, StdioServerParameters]:
    """``servers.json`` (MedMCP-Calc's ``servers_config.json`` shape) -> stdio launch parameters.

    ``${VAR}`` in args/env is expanded from ``env`` then ``os.environ``; ``python`` means this
    interpreter, so the servers run in the same virtualenv.
    """
    data = json.loads(Path(path).read_text())
    if "mcpServers" not in data:
        raise ValueError(f"{path}: expected a top-level 'mcpServers' mapping")
    lookup = {**os.environ, **(env or {})}

    def expand(s: str) -> str:
        return re.sub(r"\$\{(\w+)\}", lambda m: lookup.get(m.group(1), ""), s)

    root = Path(__file__).resolve().parents[2]
    out = {}
    for name, spec in data["mcpServers"].items():
        cmd = spec["command"]
        cmd = sys.executable if cmd in ("python", "python3") else cmd
        pythonpath = os.pathsep.join(p for p in (str(root), lookup.get("PYTHONPATH", "")) if p)
        out[name] = StdioServerParameters(
            command=cmd, args=[expand(a) for a in spec.get("args", [])],
            env={"PYTHONPATH": pythonpath, **{k: expand(v) for k, v in (spec.get("env") or {}).items()}},
            cwd=spec.get("cwd"),
        )
    return out


class Toolbox:
    """Opens each server with ``mcp.Client``; use as ``async with``. Re-enterable (a fresh session each time)."""

    def __init__(self, targets: dict[str, Callable[[], Any]]):
        self._targets = targets
        self._stack: AsyncExitStack | None = None
        self._clients: dict[str, Client] = {}
        self._tool_server: dict[str, str] = {}
        self._specs: list[ToolSchema] | None = None

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def in_process(cls, dsn: str | None = None, *, servers: tuple[str, ...] = SERVERS, sql_limits=None,
                   sandbox=None, reference_index=None, web=None, fmt: ToolFormat = "official") -> "Toolbox":
        """Servers in this process. ``dsn``: the read-only DSN of the EHR database (postgres server)."""
        _check_format(fmt)
        targets: dict[str, Callable[[], Any]] = {}
        for s in servers:
            s = SERVER_ALIASES.get(s, s)
            if s == POSTGRES:
                from calcmate.tools import postgres

                targets[s] = lambda: postgres.build_server(dsn, sql_limits, fmt)
            elif s == SEARCH:
                from calcmate.tools import reference

                targets[s] = lambda: reference.build_server(reference_index or _shared_reference_index(), web, fmt=fmt)
            elif s == PYTHON:
                from calcmate.tools import python

                targets[s] = lambda: python.build_server(sandbox, fmt=fmt)
            else:
                raise ValueError(f"unknown server {s!r}; expected one of {SERVERS}")
        return cls(targets)

    @classmethod
    def stdio(cls, dsn: str | None = None, *, config: str | Path = DEFAULT_CONFIG,
              servers: tuple[str, ...] | None = None, env: dict[str, str] | None = None,
              fmt: ToolFormat = "official") -> "Toolbox":
        """Servers as subprocesses launched from ``config`` (``CALCMATE_EHR_DSN`` set from ``dsn``)."""
        _check_format(fmt)
        env = {**(env or {}), **({"CALCMATE_EHR_DSN": dsn} if dsn else {})}
        params = load_servers_config(config, env)
        for p in params.values():
            p.env = {**(p.env or {}), ENV_TOOLS_FORMAT: fmt}
        names = tuple(SERVER_ALIASES.get(n, n) for n in servers) if servers else tuple(params)
        return cls({n: (lambda p=params[n]: p) for n in names})

    # -- session -----------------------------------------------------------------------------
    async def __aenter__(self) -> "Toolbox":
        self._stack = AsyncExitStack()
        try:
            for name, make in self._targets.items():
                self._clients[name] = await self._stack.enter_async_context(Client(make()))
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        stack, self._stack = self._stack, None
        self._clients, self._specs, self._tool_server = {}, None, {}
        if stack is not None:
            await stack.aclose()

    def session(self) -> "Toolbox":
        return self

    def close(self) -> None:
        """Nothing to release outside a session (pools are process-wide); kept for symmetry."""

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(self._targets)

    async def list_tools(self) -> list[ToolSchema]:
        if self._specs is None:
            self._require()
            specs = []
            for name, c in self._clients.items():
                for t in (await c.list_tools()).tools:
                    specs.append(ToolSchema(name, t.name, t.description or "", dict(t.input_schema or {})))
                    self._tool_server.setdefault(t.name, name)
            self._specs = specs
        return list(self._specs)

    async def call(self, server: str | None, tool: str, arguments: dict[str, Any] | None = None) -> tuple[str, bool]:
        """Call ``tool`` on ``server`` -> ``(text, is_error)``. Never raises for a bad call:
        unknown servers/tools and argument errors come back as error text the model can read."""
        self._require()
        if self._specs is None:
            await self.list_tools()
        srv = SERVER_ALIASES.get(server or "", server)
        if srv not in self._clients:
            srv = self._tool_server.get(tool)
            if srv is None:
                return f"unknown tool {tool!r} on server {server!r}; available: {', '.join(sorted(self._tool_server))}", True
        try:
            res = await self._clients[srv].call_tool(tool, arguments or {})
        except Exception as e:  # transport failure: an observation, not a crash
            return f"tool call failed: {type(e).__name__}: {e}", True
        text = "\n".join(getattr(c, "text", "") for c in res.content if getattr(c, "type", "") == "text")
        if res.is_error:
            text = re.sub(r"^Error executing tool \w+: ", "", text)
        return text, bool(res.is_error)

    def _require(self) -> None:
        if self._stack is None:
            raise RuntimeError("Toolbox is not open: use 'async with toolbox:'")
