"""MCP server ``postgres_executor``: read-only SQL over the EHR (MedMCP-Calc's ``postgres_executor``).

Tools, as the official server names them: ``run_read_only_sql(query)``, ``list_tables()`` and
``describe_tables(table_names)``. By default (``fmt="official"``) results and errors are exactly the
official server's (``calcmate.tools.official``): JSON rows per statement, JSON table lists and
schemas, and error *strings* (the official server never flags an error). ``fmt="calcmate"`` gives
CalcMate's richer layout: a pipe-separated table with a row count, commented schemas, and tool
errors (``is_error``).

Read-only is enforced twice: the connection is the database's read-only role (SELECT grants on
the EHR tables only, sessions read-only by default), and every call runs inside
``BEGIN READ ONLY`` with a ``SET LOCAL statement_timeout``. The official server splits a query on
``;`` and runs each statement in that one transaction; so do we, each statement sent as a prepared
statement (extended protocol), which PostgreSQL refuses to build from more than one command. COPY
is refused before it is sent. Rows and characters are capped (the official server has no cap; a
capped statement says so in a ``note`` key of its entry).

Run as a stdio server: ``python -m calcmate.tools.postgres --dsn DSN`` (or ``$CALCMATE_EHR_DSN``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import decimal
import json
import os
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from calcmate.tools import official

ENV_EHR_DSN = "CALCMATE_EHR_DSN"


@dataclass(frozen=True)
class SqlLimits:
    max_rows: int = 200
    max_chars: int = 20_000
    max_cell_chars: int = 2_000
    statement_timeout_ms: int = 5_000
    pool_size: int = 4


_COMMENT_RE = re.compile(r"(--[^\n]*\n?)|(/\*.*?\*/)", re.S)


def _first_keyword(query: str) -> str:
    q = _COMMENT_RE.sub(" ", query).strip().lstrip("(").strip()
    return q.split(None, 1)[0].upper() if q else ""


def _cell(v: Any, cap: int) -> str:
    if v is None:
        s = "NULL"
    elif isinstance(v, (dt.datetime, dt.date, dt.time)):
        s = v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat()
    elif isinstance(v, float):
        s = f"{v:g}" if abs(v) < 1e15 else repr(v)
    elif isinstance(v, decimal.Decimal):
        s = format(v, "f")
    elif isinstance(v, (bytes, memoryview)):
        s = f"<{len(bytes(v))} bytes>"
    else:
        s = str(v)
    s = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "").replace("|", "\\|")
    return s if len(s) <= cap else s[:cap] + f"…[cell truncated, {len(s)} chars]"


def render_table(columns: list[str], rows: list[tuple], *, more: bool, limits: SqlLimits) -> str:
    """``col | col`` header, one line per row, then a row count or a truncation notice."""
    lines = [" | ".join(columns)]
    size = len(lines[0])
    shown = 0
    char_cut = False
    for r in rows:
        line = " | ".join(_cell(v, limits.max_cell_chars) for v in r)
        if size + len(line) + 1 > limits.max_chars:
            char_cut = True
            break
        lines.append(line)
        size += len(line) + 1
        shown += 1
    if char_cut:
        lines.append(
            f"[truncated: output limit of {limits.max_chars} characters reached after {shown} rows; "
            "select fewer columns or add WHERE/LIMIT]"
        )
    elif more:
        lines.append(f"[truncated: showing the first {shown} rows; the query returned more. Add WHERE/LIMIT or aggregate]")
    else:
        lines.append(f"({shown} row{'s' if shown != 1 else ''})")
    return "\n".join(lines)


class SqlExecutor:
    """A small pool of read-only connections; each call is one READ ONLY transaction."""

    def __init__(self, dsn: str, limits: SqlLimits | None = None):
        if not dsn:
            raise ValueError(f"no database DSN given (pass --dsn or set ${ENV_EHR_DSN})")
        self.dsn, self.limits = dsn, limits or SqlLimits()
        self._free: asyncio.Queue[psycopg.AsyncConnection] | None = None
        self._made = 0

    async def _acquire(self) -> psycopg.AsyncConnection:
        if self._free is None:
            self._free = asyncio.Queue()
        if self._free.empty() and self._made < self.limits.pool_size:
            self._made += 1
            try:
                return await psycopg.AsyncConnection.connect(
                    self.dsn, cursor_factory=psycopg.AsyncRawCursor, connect_timeout=10
                )
            except psycopg.Error as e:
                self._made -= 1
                raise ToolError(f"database unavailable: {e}") from None
        return await self._free.get()

    async def _release(self, conn: psycopg.AsyncConnection) -> None:
        if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            try:
                await conn.close()
            finally:
                self._made -= 1
            return
        self._free.put_nowait(conn)

    async def query(self, query: str, params: tuple | None = None) -> tuple[list[str], list[tuple], bool]:
        """Run one read-only statement; returns (columns, rows up to max_rows, more_rows)."""
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query is empty: pass one SQL SELECT statement")
        if _first_keyword(query) == "COPY":
            raise ToolError("COPY is not allowed: use SELECT to read data")
        conn = await self._acquire()
        try:
            async with conn.transaction():
                await conn.execute("SET TRANSACTION READ ONLY")
                await conn.execute(f"SET LOCAL statement_timeout = {int(self.limits.statement_timeout_ms)}")
                cur = conn.cursor()
                await cur.execute(query, params, prepare=True)
                if cur.description is None:
                    return [], [], False
                cols = [d.name for d in cur.description]
                rows = await cur.fetchmany(self.limits.max_rows + 1)
                return cols, rows[: self.limits.max_rows], len(rows) > self.limits.max_rows
        except psycopg.errors.QueryCanceled:
            raise ToolError(
                f"query cancelled: it ran longer than the {self.limits.statement_timeout_ms / 1000:g} s statement timeout"
            ) from None
        except psycopg.errors.SyntaxError as e:
            msg = str(e).strip()
            if "multiple commands" in msg:
                msg = "only one SQL statement per call is allowed (" + msg + ")"
            raise ToolError(msg) from None
        except psycopg.errors.ReadOnlySqlTransaction as e:
            raise ToolError(f"the EHR is read-only: {str(e).strip()}") from None
        except psycopg.errors.InsufficientPrivilege as e:
            raise ToolError(f"permission denied (read-only access to the EHR tables only): {str(e).strip()}") from None
        except psycopg.Error as e:
            raise ToolError(f"{type(e).__name__}: {str(e).strip()}") from None
        except ToolError:
            raise
        except Exception as e:  # a driver-level surprise (decoding, ...): still a readable tool error
            raise ToolError(f"{type(e).__name__}: {e}") from None
        finally:
            await self._release(conn)

    async def official_sql(self, query: str) -> str:
        """``run_read_only_sql`` as the official server answers it (always a string, never an error)."""
        if not isinstance(query, str):
            return official.SQL_UNEXPECTED.format("query must be a string")
        statements = [st.strip() + ";" for st in re.split(r";", query) if st.strip()]
        try:
            conn = await self._acquire()
        except ToolError:
            return official.DB_UNAVAILABLE
        results: list[list[dict[str, Any]]] = []
        notes: dict[int, str] = {}
        try:
            async with conn.transaction():
                await conn.execute("SET TRANSACTION READ ONLY")
                await conn.execute(f"SET LOCAL statement_timeout = {int(self.limits.statement_timeout_ms)}")
                for i, st in enumerate(statements):
                    if _first_keyword(st) == "COPY":
                        return official.SQL_ERROR.format("COPY is not allowed: use SELECT to read data")
                    cur = conn.cursor()
                    await cur.execute(st, prepare=True)
                    if cur.description is None:
                        results.append([])
                        continue
                    cols = [d.name for d in cur.description]
                    rows = await cur.fetchmany(self.limits.max_rows + 1)
                    if len(rows) > self.limits.max_rows:
                        notes[i] = f"truncated: showing the first {self.limits.max_rows} rows; add WHERE/LIMIT or aggregate"
                    results.append([dict(zip(cols, r)) for r in rows[: self.limits.max_rows]])
        except psycopg.errors.InsufficientPrivilege:
            return official.SQL_PERMISSION
        except psycopg.Error as e:
            msg = (e.diag.message_primary if e.diag and e.diag.message_primary else str(e)).strip()
            return official.SQL_ERROR.format(msg)
        except Exception as e:  # a driver-level surprise (decoding, ...)
            return official.SQL_UNEXPECTED.format(e)
        finally:
            await self._release(conn)
        text = official.sql_results(results)
        if notes or len(text) > self.limits.max_chars:
            entries = json.loads(text)
            for i, note in notes.items():
                entries[i]["note"] = note
            text = official.dumps(entries)
            while len(text) > self.limits.max_chars and any(isinstance(e["result"], list) and e["result"] for e in entries):
                e = max((e for e in entries if isinstance(e["result"], list)), key=lambda e: len(e["result"]))
                keep = max(0, len(e["result"]) * 3 // 4 if len(e["result"]) > 1 else 0)
                e["result"] = e["result"][:keep]
                e["note"] = (f"truncated: output limit of {self.limits.max_chars} characters; showing {keep} rows; "
                             "select fewer columns or add WHERE/LIMIT")
                text = official.dumps(entries)
        return text

    async def official_list_tables(self) -> str:
        try:
            _, rows, _ = await self.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name")
        except ToolError as e:
            return f"Error listing tables: {e}"
        return official.table_list([r[0] for r in rows])

    async def official_describe_tables(self, table_names: list[str]) -> str:
        names = [table_names] if isinstance(table_names, str) else list(table_names or [])
        try:
            _, rows, _ = await self.query(
                "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
                "WHERE table_name = ANY($1) AND table_schema = 'public' ORDER BY table_name, ordinal_position",
                ([str(n) for n in names],),
            )
        except ToolError as e:
            return json.dumps({"error": f"Error describing tables: {e}"})
        tables: dict[str, list[tuple[str, str, str]]] = {}
        for t, c, ty, n in rows:
            tables.setdefault(t, []).append((c, ty, n))
        return official.table_schemas(tables, names)

    async def run_sql(self, query: str) -> str:
        cols, rows, more = await self.query(query)
        if not cols:
            return "statement executed; it returned no rows"
        return render_table(cols, rows, more=more, limits=self.limits)

    async def list_tables(self) -> str:
        cols, rows, more = await self.query(
            "SELECT c.table_name, obj_description(format('%I.%I', c.table_schema, c.table_name)::regclass) AS description "
            "FROM information_schema.tables c WHERE c.table_schema = 'public' AND has_table_privilege(format('%I.%I', c.table_schema, c.table_name), 'SELECT') "
            "ORDER BY 1"
        )
        return "\n".join(r[0] for r in rows) if rows else "no tables are visible"

    async def describe_tables(self, table_names: list[str]) -> str:
        if isinstance(table_names, str):
            table_names = [t.strip() for t in table_names.split(",") if t.strip()]
        if not table_names:
            raise ToolError("table_names is empty: pass a list of table names (see list_tables)")
        out: list[str] = []
        missing: list[str] = []
        for name in table_names:
            _, rows, _ = await self.query(
                "SELECT column_name, data_type, is_nullable, "
                "col_description(format('%I.%I', table_schema, table_name)::regclass, ordinal_position::int) "
                "FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
                (str(name).strip(),),
            )
            if not rows:
                missing.append(str(name))
                continue
            out.append(f"table {name}:")
            for col, typ, nullable, desc in rows:
                out.append(f"  {col} {typ}{'' if nullable == 'YES' else ' NOT NULL'}{f'  -- {desc}' if desc else ''}")
        if missing and not out:
            raise ToolError(f"no such table(s): {', '.join(missing)}; call list_tables to see the tables")
        if missing:
            out.append(f"(no such table(s): {', '.join(missing)})")
        return "\n".join(out)

    async def close(self) -> None:
        if self._free is None:
            return
        while not self._free.empty():
            conn = self._free.get_nowait()
            await conn.close()


SQL_DOC = (
    "Run read-only SQL (PostgreSQL) against the hospital EHR database and return the rows. "
    "Tables: patient_information, visit_inpatient, admission_record, diagnostic_record, laboratory_result, "
    "vital_signs, examination_report, order_inpatient, anethesia_record. Filter by patient_id; many values "
    "are TEXT. Results are capped; use WHERE, ORDER BY and LIMIT."
)


def build_server(dsn: str | None = None, limits: SqlLimits | None = None,
                 fmt: official.ToolFormat = "official") -> MCPServer:
    """The ``postgres_executor`` MCP server over one database (``dsn`` should be the read-only role's)."""
    ex = SqlExecutor(dsn or os.environ.get(ENV_EHR_DSN, ""), limits)
    server = MCPServer(official.POSTGRES, log_level="WARNING")

    if fmt == "official":
        @server.tool(name="run_read_only_sql", description=official.RUN_READ_ONLY_SQL_DOC)
        async def run_read_only_sql(query: str) -> str:
            return await ex.official_sql(query)

        @server.tool(name="list_tables", description=official.LIST_TABLES_DOC)
        async def list_tables() -> str:
            return await ex.official_list_tables()

        @server.tool(name="describe_tables", description=official.DESCRIBE_TABLES_DOC)
        async def describe_tables(table_names: list[str]) -> str:
            return await ex.official_describe_tables(table_names)
    elif fmt == "calcmate":
        @server.tool(name="run_read_only_sql", description=SQL_DOC)
        async def run_read_only_sql_calcmate(query: str) -> str:
            return await ex.run_sql(query)

        @server.tool(name="list_tables", description="List the tables of the EHR database.")
        async def list_tables_calcmate() -> str:
            return await ex.list_tables()

        @server.tool(name="describe_tables", description="Describe the columns (name, type, meaning) of the given EHR tables.")
        async def describe_tables_calcmate(table_names: list[str]) -> str:
            return await ex.describe_tables(table_names)
    else:
        raise ValueError(f"tools.format: unknown {fmt!r}; choose one of {official.FORMATS}")

    server.executor = ex  # type: ignore[attr-defined]  # for Toolbox.close()
    return server


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="CalcMate postgres_executor MCP server (stdio): read-only SQL over the EHR.")
    p.add_argument("--dsn", default=os.environ.get(ENV_EHR_DSN), help=f"read-only DSN (default ${ENV_EHR_DSN})")
    p.add_argument("--max-rows", type=int, default=SqlLimits.max_rows)
    p.add_argument("--max-chars", type=int, default=SqlLimits.max_chars)
    p.add_argument("--timeout-ms", type=int, default=SqlLimits.statement_timeout_ms, help="statement timeout")
    p.add_argument("--format", choices=official.FORMATS, default=os.environ.get("CALCMATE_TOOLS_FORMAT", "official"),
                   help="observation format: the official MedMCP-Calc server's (default) or CalcMate's richer one")
    a = p.parse_args(argv)
    if not a.dsn:
        p.error(f"no DSN: pass --dsn or set ${ENV_EHR_DSN}")
    limits = SqlLimits(max_rows=a.max_rows, max_chars=a.max_chars, statement_timeout_ms=a.timeout_ms)
    build_server(a.dsn, limits, a.format).run("stdio")


if __name__ == "__main__":
    main()
