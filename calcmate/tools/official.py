"""What the official MedMCP-Calc tool servers show a model: names, descriptions, result shapes, errors.

A CalcMate model is trained in our environment and judged in the official one, so by default our
servers speak exactly as the official ones do (``tools.format: official``). The strings and shapes
below follow the official servers' code (SPIRAL-MED/MedMCP-Calc, MIT licence, Zhu et al.,
``codes/medmcpcalc_mcp/servers/{postgres_executor,google_search,python_executor}/server.py``);
the code here is our own. The tool descriptions are the official docstrings, verbatim (the MCP SDK
sends a tool's raw docstring as its description), so the tool list is byte-identical too.

``tools.format: calcmate`` keeps CalcMate's richer formats (pipe tables, numbered hits, commented
schemas) as an option.
"""

from __future__ import annotations

import json
from typing import Any, Literal

ToolFormat = Literal["official", "calcmate"]
FORMATS: tuple[str, ...] = ("official", "calcmate")

# server names as in the official servers_config.json (the ReAct prompt shows them as server_name)
POSTGRES, SEARCH, PYTHON = "postgres_executor", "google_search", "python_executor"
OFFICIAL_TOOLS: dict[str, tuple[str, ...]] = {
    POSTGRES: ("run_read_only_sql", "list_tables", "describe_tables"),
    SEARCH: ("search", "fetch"),
    PYTHON: ("run_python",),
}
TOOL_NAMES: tuple[str, ...] = tuple(t for ts in OFFICIAL_TOOLS.values() for t in ts)

# -- postgres_executor ---------------------------------------------------------------------------
SQL_EMPTY = "Query executed successfully. No results returned."
SQL_PERMISSION = "Database Error: Permission denied. You do not have access to this data."
SQL_ERROR = "SQL Execution Error: {}"
SQL_UNEXPECTED = "Unexpected Error: {}"
DB_UNAVAILABLE = "System Error: Could not connect to the database."
NO_TABLES = "No tables found in schema '{}'. Please verify the DB_SCHEMA configuration."

RUN_READ_ONLY_SQL_DOC = """
        Execute a read-only SQL query on the PostgreSQL database.
        
        Use this tool to inspect data, check table schemas, or analyze statistics.
        
        Args:
            query: The SQL query string to execute
        """
LIST_TABLES_DOC = """
        List all available tables in the database schema.
        """
DESCRIBE_TABLES_DOC = """
        Get the schema definition for MULTIPLE tables at once in Compact JSON format.
        
        Args:
            table_names: A list of table names to describe.
        """

# -- google_search -------------------------------------------------------------------------------
NO_SEARCH_RESULTS = "No results found."
URL_REQUIRED = "<error>URL is required</error>"
FETCH_STATUS_ERROR = "<error>Failed to fetch {url} - status code {status}</error>"

SEARCH_DOC = """
        Execute a Google search and return the top results.

        Args:
            query: The search query string.
        """
FETCH_DOC = """
        Fetches a URL using a headless browser (Playwright).
        Supports dynamic content (JS), SPAs, and complex layouts.
        Converts HTML to Markdown for easier reading.
        
        Args:
            url: The URL to fetch.
        """

# -- python_executor -----------------------------------------------------------------------------
PY_NO_OUTPUT = "Code executed successfully (no output)."
PY_TIMEOUT = "Error: Execution timed out (limit: 30s)."
PY_FORBIDDEN = ("subprocess", "os.system", "shutil.rmtree")
PY_SECURITY = "Security Error: Use of '{}' is restricted."

RUN_PYTHON_DOC = """
        Run a Python script and return the standard output.
        
        Use this tool to perform calculations, data processing, or logic tasks 
        that are difficult for the LLM to do directly.
        
        Args:
            code: The valid Python code to execute.
                  Example: "import math; print(math.sqrt(144))"
        """

# -- the official MCP client ---------------------------------------------------------------------
CLIENT_TOOL_ERROR = "Tool Execution Error: {}"  # MCPClient.call_tool on an is_error result


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """``json.dumps(..., ensure_ascii=False, default=str)`` as the official servers call it."""
    return json.dumps(obj, ensure_ascii=False, default=str, indent=indent)


def sql_results(statements: list[list[dict[str, Any]]]) -> str:
    """One ``{"sql_id", "result"}`` entry per statement; an empty result is the official sentence."""
    return dumps([{"sql_id": i, "result": rows if rows else SQL_EMPTY} for i, rows in enumerate(statements)])


def table_list(names: list[str], schema: str = "public") -> str:
    return dumps([{"table_name": n} for n in names]) if names else NO_TABLES.format(schema)


def table_schemas(tables: dict[str, list[tuple[str, str, str]]], requested: list[str], schema: str = "public") -> str:
    """``{"format_definition": [...], "tables": {name: [[col, type, "YES"/"NO"], ...]}}``."""
    if not tables:
        return json.dumps({"error": f"No tables found matching: {requested} in schema '{schema}'"})
    return dumps({"format_definition": ["column_name", "data_type", "is_nullable"],
                  "tables": {t: [[c, ty, "YES" if n == "YES" else "NO"] for c, ty, n in cols] for t, cols in tables.items()}})


def search_results(hits: list[dict[str, Any]]) -> str:
    """Serper-shaped hits ``{title, link, snippet, position, date}``, pretty-printed as the official server does."""
    if not hits:
        return NO_SEARCH_RESULTS
    return dumps([{k: h.get(k) for k in ("title", "link", "snippet", "position", "date")} for h in hits], indent=2)


def fetched(url: str, markdown: str) -> str:
    """The official fetch strips every line and drops blank ones after its HTML-to-Markdown pass."""
    body = "\n".join(ln.strip() for ln in markdown.splitlines() if ln.strip())
    return f"Contents of {url}:\n\n{body}"


def python_output(stdout: str, stderr: str) -> str:
    out = []
    if stdout.strip():
        out.append(f"Output:\n{stdout.strip()}")
    if stderr.strip():
        out.append(f"Errors/Warnings:\n{stderr.strip()}")
    return "\n\n".join(out) if out else PY_NO_OUTPUT


ERROR_PREFIXES = ("SQL Execution Error:", "Database Error:", "Unexpected Error:", "System Error:", "Error listing tables:",
                  "Tool Execution Error:", "<error>", "Security Error:", "Error: Execution timed out")


def is_error_text(text: str) -> bool:
    """An official server reports failures as ordinary strings; this recognises them."""
    t = (text or "").lstrip()
    return t.startswith(ERROR_PREFIXES) or t.startswith('{"error":')


def sql_rows(text: str) -> list[dict[str, Any]] | None:
    """The rows of an official ``run_read_only_sql`` observation (all statements), or None if the text
    is not one (an error string, or the calcmate pipe table)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "result" in d for d in data):
        return None
    return [r for d in data if isinstance(d["result"], list) for r in d["result"] if isinstance(r, dict)]
