"""The agent's workstation as MCP servers, named as the official MedMCP-Calc harness names them:
``postgres_executor`` (EHR SQL), ``google_search`` (calculator references, offline), ``python_executor``
(sandbox); ``Toolbox`` opens them in-process or over stdio behind one interface.

``calcmate.tools.official`` (the official observation formats) is plain data and stays light: scoring
and synthesis read it without importing the MCP SDK, so ``Toolbox`` is imported lazily here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SERVERS", "Toolbox", "ToolSchema", "load_servers_config"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from calcmate.tools import toolbox

        return getattr(toolbox, name)
    raise AttributeError(f"module 'calcmate.tools' has no attribute {name!r}")
