"""Shared fixtures: ONE PostgreSQL server per test session, a fresh EHR database per module.

- ``pg_server``: the session's server (embedded, or ``$CALCMATE_PG_DSN``); stopped at the end.
- ``ehr_db``: an empty EHR database (MedMCP-Calc schema, read-only role granted), one per module.
- ``dev_tasks``: the MedMCP-Calc dev tasks from tests/fixtures.
- ``materialized_dev``: ``(ehr_db, {task_id: MaterializeReport})`` with every dev task's patient
  written into one module database (seed 0).
- ``toolbox``: an in-process ``Toolbox`` (postgres on ``ehr_db``, reference, python), one per module.
- ``shared_server``: the stages' process-wide server (``calcmate.ehr.get_server``, used by synthesis
  and evaluation) is this session's server while a module runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
DEV_TASKS = FIXTURES / "medmcp_calc" / "tasks_dev.jsonl"


@pytest.fixture(scope="session")
def pg_server():
    from calcmate.ehr import start_server

    server = start_server()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_server(pg_server):
    import calcmate.ehr.server as srv

    old, srv._SHARED = srv._SHARED, pg_server
    yield pg_server
    srv._SHARED = old


def _module_db_name(request) -> str:
    mod = re.sub(r"[^a-z0-9_]", "_", request.module.__name__.rsplit(".", 1)[-1].lower())
    return f"t_{mod}"[:50]


@pytest.fixture(scope="module")
def ehr_db(pg_server, request):
    db = pg_server.create_database(_module_db_name(request))
    yield db
    pg_server.drop_database(db.name)


@pytest.fixture(scope="session")
def dev_tasks():
    from calcmate.tasks import read_tasks

    return read_tasks(DEV_TASKS)


@pytest.fixture(scope="module")
def materialized_dev(ehr_db, dev_tasks):
    from calcmate.ehr.materialize import materialize

    with ehr_db.connect() as conn:
        reports = {t.task_id: materialize(t, conn, seed=0) for t in dev_tasks}
    return ehr_db, reports


@pytest.fixture(scope="module")
def toolbox(ehr_db):
    """In-process tools. Use inside a test as ``async with toolbox.session() as tb: ...``."""
    from calcmate.tools.toolbox import Toolbox

    tb = Toolbox.in_process(dsn=ehr_db.ro_dsn)
    yield tb
    tb.close()
