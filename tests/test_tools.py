"""The MCP tool servers through the real mcp client: stdio round-trips and hostile input."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from calcmate.ehr import EHR_TABLES
from calcmate.tools import Toolbox


def _run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def seeded(materialized_dev):
    db, reports = materialized_dev
    with db.connect() as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in EHR_TABLES}
    return db, reports, counts


def test_stdio_round_trip_every_tool_calcmate_format(seeded):
    """The optional richer format (tools.format: calcmate), over stdio."""
    db, reports, _ = seeded
    rep = next(iter(reports.values()))
    lab = next(p for p in rep.placed if p.kind == "lab")

    async def go():
        async with Toolbox.stdio(db.ro_dsn, fmt="calcmate") as tb:
            names = {(s.server, s.name) for s in await tb.list_tools()}
            assert names == {("postgres_executor", "run_read_only_sql"), ("postgres_executor", "list_tables"),
                             ("postgres_executor", "describe_tables"), ("google_search", "search"),
                             ("google_search", "fetch"), ("python_executor", "run_python")}
            out = {}
            out["list"] = await tb.call("postgres", "list_tables", {})
            out["describe"] = await tb.call("postgres", "describe_tables", {"table_names": ["laboratory_result"]})
            out["sql"] = await tb.call("postgres_executor", "run_read_only_sql", {"query": lab.query})
            out["search"] = await tb.call("reference", "search", {"query": "creatinine clearance kidney function"})
            url = next(line.split("URL:")[1].strip() for line in out["search"][0].splitlines() if "URL:" in line)
            out["fetch"] = await tb.call("reference", "fetch", {"url": url})
            out["python"] = await tb.call("python", "run_python", {"code": "import numpy as np, statistics\nprint(np.sqrt(16) + statistics.mean([1, 3]))"})
            return out

    out = _run(go())
    assert all(not err for _, err in out.values()), out
    assert out["list"][0].split() == sorted(EHR_TABLES)
    assert "test_result text  -- test result" in out["describe"][0] and "report_time timestamp" in out["describe"][0]
    assert lab.stored in out["sql"][0] and " | " in out["sql"][0]
    assert "calcmate://calculators/" in out["search"][0]
    assert out["fetch"][0].startswith("# ")
    assert out["python"][0].strip() == "6.0"


HOSTILE_SQL = {
    "DROP TABLE laboratory_result": "read-only",
    "INSERT INTO patient_information (patient_id, campus_name, patient_name, gender) VALUES ('x','x','x','x')": "read-only",
    "UPDATE laboratory_result SET test_result = '0'": "read-only",
    "DELETE FROM vital_signs": "read-only",
    "SELECT 1; DROP TABLE vital_signs": "one SQL statement",
    "SET TRANSACTION READ WRITE; DELETE FROM vital_signs": "one SQL statement",
    "SELECT pg_sleep(600)": "statement timeout",
    "COPY laboratory_result TO PROGRAM 'touch /tmp/calcmate_pwned'": "COPY is not allowed",
    "copy (select 1) to '/tmp/calcmate_pwned'": "COPY is not allowed",
    "SELECT usename, passwd FROM pg_shadow": "permission denied",
    "SELECT pg_read_file('/etc/passwd')": "permission denied",
    "CREATE TABLE evil AS SELECT * FROM laboratory_result": "read-only",
    "SELECT * FROM no_such_table": "does not exist",
    "": "empty",
}


def test_hostile_sql_is_contained_and_the_database_is_intact(seeded):
    db, _, counts = seeded
    from calcmate.tools.postgres import SqlLimits

    async def go():
        results = {}
        async with Toolbox.in_process(db.ro_dsn, servers=("postgres",), sql_limits=SqlLimits(statement_timeout_ms=1500),
                                      fmt="calcmate") as tb:
            for q in HOSTILE_SQL:
                results[q] = await tb.call("postgres", "run_read_only_sql", {"query": q})
            results["after"] = await tb.call("postgres", "run_read_only_sql", {"query": "SELECT count(*) AS n FROM laboratory_result"})
        return results

    res = _run(go())
    for q, expect in HOSTILE_SQL.items():
        text, err = res[q]
        assert err, (q, text)
        assert expect.lower() in text.lower(), (q, text)
    assert not res["after"][1] and str(counts["laboratory_result"]) in res["after"][0]  # the server still answers
    assert not os.path.exists("/tmp/calcmate_pwned")
    with db.connect() as conn:
        assert {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in EHR_TABLES} == counts


def test_sql_output_caps_say_they_truncated(seeded):
    db, _, _ = seeded
    from calcmate.tools.postgres import SqlLimits

    async def go():
        async with Toolbox.in_process(db.ro_dsn, servers=("postgres",), sql_limits=SqlLimits(max_rows=5, max_chars=600),
                                      fmt="calcmate") as tb:
            return (await tb.call("postgres", "run_read_only_sql", {"query": "SELECT * FROM laboratory_result"}),
                    await tb.call("postgres", "run_read_only_sql", {"query": "SELECT patient_id FROM laboratory_result"}),
                    await tb.call("postgres", "run_read_only_sql", {"query": "SELECT 1 AS one"}))

    wide, narrow, one = _run(go())
    assert "[truncated: output limit of 600 characters" in wide[0] and len(wide[0]) < 900
    assert "[truncated: showing the first 5 rows" in narrow[0] and len(narrow[0].splitlines()) == 7
    assert one == ("one\n1\n(1 row)", False)


HOSTILE_PY = {
    "loop": ("while True:\n    pass", "limit"),
    "fork_bomb": ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass", "limit"),
    "alloc_10gb": ("x = bytearray(10 * 1024 ** 3)\nprint('allocated')", "MemoryError"),
    "socket_tcp": ("import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 80))\nprint('connected')", "Error"),
    "write_outside": ("open('/tmp/calcmate_sandbox_escape', 'w').write('x')\nprint('wrote')", "Error"),
    "huge_print": ("print('x' * 50_000_000)", "output truncated"),
}


def test_hostile_python_is_contained(tmp_path, pg_server):
    from calcmate.tools.sandbox import SandboxLimits, SandboxPool

    os.environ["CALCMATE_TEST_SECRET"] = "s3cr3t-value"  # the parent's environment must not leak
    pool = SandboxPool(1, SandboxLimits(wall_s=3, cpu_s=2, mem_mb=1024, max_chars=2000))
    try:
        for name, (code, expect) in HOSTILE_PY.items():
            res = pool.run(code)
            text = res.text(pool.limits)
            assert not res.ok, (name, text)
            assert expect.lower() in text.lower(), (name, text)
            assert "connected" not in text and "wrote" not in text and "allocated" not in text
        assert not os.path.exists("/tmp/calcmate_sandbox_escape")
        env = pool.run("import os\nprint(sorted(os.environ.items()))")
        assert env.ok and "s3cr3t" not in env.output and "CALCMATE" not in env.output
        # a fresh, private working directory per call, removed afterwards
        a, b = pool.run("import os\nopen('f.txt','w').write('1')\nprint(os.getcwd())"), pool.run("import os\nprint(os.getcwd(), os.listdir('.'))")
        assert a.ok and b.ok and a.output.strip() != b.output.split()[0] and "[]" in b.output
        assert not os.path.exists(a.output.strip())
        # the embedded PostgreSQL socket is not reachable from the sandbox
        if pg_server.embedded:
            sock_dir = pg_server.admin_dsn.split("host=")[1]
            r = pool.run(f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({sock_dir + '/.s.PGSQL.5432'!r})\nprint('connected')")
            assert not r.ok and "connected" not in r.output
        g = pool.guarantees()
        if os.geteuid() == 0:
            assert g["unprivileged_uid"] and g["network_namespace"]
        # still healthy after all that
        assert pool.run("print(sum(range(10)))").output.strip() == "45"
    finally:
        pool.close()
        os.environ.pop("CALCMATE_TEST_SECRET", None)
    assert socket  # imported for the hostile snippets' sake (documentation)


def test_toolbox_reports_unknown_tools_and_bad_arguments(ehr_db):
    async def go():
        async with Toolbox.in_process(ehr_db.ro_dsn, fmt="calcmate") as tb:
            return (await tb.call("nope", "nothing", {}), await tb.call("postgres", "run_read_only_sql", {}),
                    await tb.call(None, "describe_tables", {"table_names": ["nope"]}),
                    await tb.call("reference", "fetch", {"url": "calcmate://calculators/does_not_exist"}))

    unknown, missing_arg, bad_table, bad_url = _run(go())
    assert unknown[1] and "unknown tool" in unknown[0]
    assert missing_arg[1] and "query" in missing_arg[0]
    assert bad_table[1] and "no such table" in bad_table[0]
    assert bad_url[1] and "search" in bad_url[0]
