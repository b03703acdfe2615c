"""What the episode loop needs from the tool servers, and nothing more.

``ToolSet`` is the seam between the agent and ``calcmate.tools.Toolbox`` (real MCP servers,
in-process or stdio): list the tools, call one. Tool names are unique across servers, so the native protocol (which
names only the function) can find the server. The tools are the official harness's six
(``calcmate.tools.official.TOOL_NAMES``); a call to any other name, such as the paper's ``run_sql``,
is an unknown tool, exactly as in the official harness.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

SQL_TOOLS = ("run_read_only_sql", "run_sql")  # run_sql: CalcMate's pre-official name, in old records only
# Table 3 of the paper counts four kinds of call.
CATEGORY = {
    "run_sql": "sql", "run_read_only_sql": "sql", "list_tables": "sql", "describe_tables": "sql",
    "run_python": "python", "search": "search", "fetch": "fetch",
}


@dataclass(frozen=True)
class ToolSpec:
    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def openai_schema(self) -> dict[str, Any]:
        """The ``tools=[...]`` entry of the chat API / chat template."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": dict(self.input_schema)}}

    def react_schema(self) -> dict[str, Any]:
        """One entry of the official harness's tool listing (``MCPManager.list_tools_str``): the mcp 1.x
        ``Tool.model_dump()`` of a FastMCP tool (schemas in pydantic's key order, the ``-> str``
        output schema FastMCP derives) plus ``server_name``."""
        order = ("properties", "required", "title", "type")
        schema = dict(self.input_schema)
        schema = {**{k: schema[k] for k in order if k in schema}, **{k: v for k, v in schema.items() if k not in order}}
        output = {"properties": {"result": {"title": "Result", "type": "string"}}, "required": ["result"],
                  "title": f"{self.name}Output", "type": "object"}
        return {"name": self.name, "title": None, "description": self.description, "inputSchema": schema,
                "outputSchema": output, "icons": None, "annotations": None, "meta": None, "execution": None,
                "server_name": self.server}


@runtime_checkable
class ToolSet(Protocol):
    async def list_tools(self) -> list[ToolSpec]: ...

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]: ...


class ToolCatalog:
    """Resolves a (server?, tool) request to a known tool and checks its arguments."""

    def __init__(self, specs: list[ToolSpec]):
        self.specs = specs
        self._by_name: dict[str, ToolSpec] = {}
        for s in specs:
            self._by_name.setdefault(s.name, s)

    def resolve(self, tool: str, server: str | None = None) -> ToolSpec:
        """The tool spec, or ValueError with a message the model can act on."""
        spec = self._by_name.get(tool)
        if spec is None:
            known = ", ".join(f"{s.server}.{s.name}" for s in self.specs)
            raise ValueError(f"unknown tool {tool!r}; available tools: {known}")
        # a wrong or official-harness server name (postgres_executor, ...) is forgiven: tool names are unique
        return spec

    def check_arguments(self, spec: ToolSpec, arguments: Any) -> dict[str, Any]:
        """Required keys present, no unknown keys, basic JSON types: the cheap checks worth doing
        before a round trip, so the error observation names the argument."""
        if not isinstance(arguments, dict):
            raise ValueError(f"arguments of {spec.name!r} must be a JSON object, got {type(arguments).__name__}")
        schema = spec.input_schema or {}
        props = schema.get("properties") or {}
        for req in schema.get("required") or []:
            if req not in arguments:
                raise ValueError(f"tool {spec.name!r} is missing required argument {req!r}")
        if props and not schema.get("additionalProperties", False):
            extra = sorted(set(arguments) - set(props))
            if extra:
                raise ValueError(f"tool {spec.name!r} got unknown argument {extra[0]!r}; expected {sorted(props)}")
        for k, v in arguments.items():
            t = (props.get(k) or {}).get("type")
            if t == "string" and not isinstance(v, str):
                if isinstance(v, (int, float)):
                    arguments[k] = str(v)
                else:
                    raise ValueError(f"argument {k!r} of {spec.name!r} must be a string")
            if t == "array" and isinstance(v, str):  # models often pass "a, b" for a list
                try:
                    parsed = json.loads(v)
                    arguments[k] = parsed if isinstance(parsed, list) else [parsed]
                except json.JSONDecodeError:
                    arguments[k] = [x.strip() for x in v.split(",") if x.strip()]
        return arguments


class FunctionTools:
    """A ToolSet over plain Python callables: for unit tests of protocols and for scripted
    environments that need no database. The real tools are ``calcmate.tools.Toolbox``."""

    def __init__(self, tools: dict[tuple[str, str], tuple[Callable[..., Any], dict[str, Any], str]]):
        self._tools = tools

    async def list_tools(self) -> list[ToolSpec]:
        return [ToolSpec(server, name, desc, schema) for (server, name), (_, schema, desc) in self._tools.items()]

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        fn = self._tools[(server, tool)][0]
        try:
            out = fn(**arguments)
            if isinstance(out, Awaitable):
                out = await out
            return str(out), False
        except Exception as e:  # a tool error is an observation, like MCP's is_error
            return f"Error: {e}", True


async def toolset_specs(tools: Any) -> list[ToolSpec]:
    """Tool specs from a ToolSet or from anything with MCP-like tool objects
    (``name``, ``description``, ``input_schema``/``inputSchema``, server name)."""
    raw = await tools.list_tools()
    out: list[ToolSpec] = []
    if isinstance(raw, Mapping):  # {server: [tools]}
        raw = [(srv, t) for srv, ts in raw.items() for t in ts]
    else:
        raw = [(None, t) for t in raw]
    for server, t in raw:
        if isinstance(t, ToolSpec):
            out.append(t)
            continue
        get = (lambda k, t=t: t.get(k)) if isinstance(t, Mapping) else (lambda k, t=t: getattr(t, k, None))
        schema = get("input_schema") or get("inputSchema") or get("parameters") or {"type": "object", "properties": {}}
        out.append(ToolSpec(server or get("server") or get("server_name") or "", get("name"), get("description") or "", schema))
    return out
