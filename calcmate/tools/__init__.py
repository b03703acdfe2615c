"""The agent's workstation as MCP servers: ``postgres`` (EHR SQL), ``reference`` (calculator docs),
``python`` (sandbox); ``Toolbox`` opens them in-process or over stdio behind one interface."""

from calcmate.tools.toolbox import SERVERS, Toolbox, ToolSchema, load_servers_config

__all__ = ["SERVERS", "Toolbox", "ToolSchema", "load_servers_config"]
