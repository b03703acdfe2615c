"""The EHR server lifecycle: databases from the template, the read-only role, no leftovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest

from calcmate.ehr import EHR_TABLES, RO_ROLE


def test_fresh_database_has_the_nine_tables(ehr_db):
    with ehr_db.connect() as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema='public' ORDER BY 1"
        ).fetchall()
    assert sorted(r[0] for r in rows) == sorted(EHR_TABLES)


def test_databases_are_isolated(pg_server):
    a, b = pg_server.create_database(), pg_server.create_database()
    try:
        with a.connect() as ca:
            ca.execute("INSERT INTO patient_information (patient_id, campus_name, patient_name, gender) VALUES ('p1','c','n','Male')")
        with b.connect() as cb:
            assert cb.execute("SELECT count(*) FROM patient_information").fetchone()[0] == 0
    finally:
        pg_server.drop_database(a.name)
        pg_server.drop_database(b.name)


def test_readonly_role_can_select_and_nothing_else(ehr_db):
    with ehr_db.connect(readonly=True) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == RO_ROLE
        assert conn.execute("SELECT count(*) FROM vital_signs").fetchone()[0] >= 0
        role = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert role == (False, False, False, False)
        for stmt, err in [
            ("SELECT passwd FROM pg_shadow", psycopg.errors.InsufficientPrivilege),
            ("SELECT pg_read_file('/etc/passwd')", psycopg.errors.InsufficientPrivilege),
            ("CREATE TABLE evil (a int)", psycopg.errors.ReadOnlySqlTransaction),
        ]:
            with pytest.raises(err):
                conn.execute(stmt)
        # even with read-only switched off for the session, the role has no write privilege
        conn.execute("SET default_transaction_read_only = off")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM laboratory_result")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE evil (a int)")


def test_readonly_role_cannot_open_the_maintenance_database(pg_server):
    if not pg_server.embedded:
        pytest.skip("CALCMATE_PG_DSN points at your own server: only the embedded server is locked down beyond the EHR databases")
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(pg_server.dsn("postgres", user=RO_ROLE, password=pg_server.ro_password)).close()


def test_bad_database_name_is_rejected(pg_server):
    with pytest.raises(ValueError, match="database name"):
        pg_server.create_database("Robert'); DROP TABLE x;--")


_CHILD = """
import sys, threading, time
from calcmate.ehr import start_server
s = start_server()
if "--stuck-thread" in sys.argv:  # a non-daemon worker that never finishes (an executor stuck in I/O)
    threading.Thread(target=time.sleep, args=(600,)).start()
print(s.admin_dsn, flush=True)
time.sleep(120)
"""


def _postgres_alive(dsn: str) -> bool:
    try:
        psycopg.connect(dsn, connect_timeout=2).close()
        return True
    except psycopg.OperationalError:
        return False


@pytest.mark.parametrize("how", ["sigterm", "sigkill", "sigterm-stuck-thread"])
def test_embedded_server_dies_with_its_owner(how):
    """No postgres outlives the process that started it, even one killed with SIGKILL."""
    if os.environ.get("CALCMATE_PG_DSN"):
        pytest.skip("CALCMATE_PG_DSN points at your own server: this checks the embedded server's lifecycle")
    env = {k: v for k, v in os.environ.items() if k != "CALCMATE_PG_DSN"}
    args = ["--stuck-thread"] if how.endswith("stuck-thread") else []
    p = subprocess.Popen([sys.executable, "-c", _CHILD, *args], stdout=subprocess.PIPE, text=True, env=env)
    try:
        dsn = p.stdout.readline().strip()
        assert dsn.startswith("postgresql://")
        pgdata = dsn.split("host=", 1)[1]
        assert _postgres_alive(dsn)
        p.send_signal(signal.SIGKILL if how == "sigkill" else signal.SIGTERM)
        p.wait(30)  # with a stuck thread too: the exit grace period ends the process
        deadline = time.time() + 30
        while time.time() < deadline and (_postgres_alive(dsn) or os.path.exists(pgdata)):
            time.sleep(0.2)
        assert not _postgres_alive(dsn)
        assert not os.path.exists(pgdata)
    finally:
        if p.poll() is None:
            p.kill()
