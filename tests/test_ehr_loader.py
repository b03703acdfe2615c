"""The dump loader: <table>.csv.gz files round-trip into a fresh database unchanged."""

from __future__ import annotations

import pytest

from calcmate.ehr import EHR_TABLES
from calcmate.ehr.loader import dump_database, load_dump


def test_dump_round_trip(materialized_dev, pg_server, tmp_path):
    src, _ = materialized_dev
    files = dump_database(src, tmp_path)
    assert set(files) == set(EHR_TABLES)
    dst = pg_server.create_database()
    try:
        counts = load_dump(dst, tmp_path)
        with src.connect() as a, dst.connect() as b:
            for t in EHR_TABLES:
                q = f"SELECT * FROM {t} ORDER BY 1, 2, 3, 4"
                assert a.execute(q).fetchall() == b.execute(q).fetchall(), t
                assert counts[t] == a.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
    finally:
        pg_server.drop_database(dst.name)


def test_missing_dump_is_a_clear_error(pg_server, tmp_path, ehr_db):
    with pytest.raises(FileNotFoundError, match="csv.gz"):
        load_dump(ehr_db, tmp_path)


def test_official_dump_end_to_end(materialized_dev, pg_server, shared_server, tmp_path):
    """The path of a user with the official dump: <table>.csv.gz (+ schema.sql) -> load_dump into the
    server -> eval/evaluate.py with ehr.dsn on the tasks: nothing is materialized, the agent's SQL
    reads the loaded rows through the official tools."""
    import asyncio
    import json

    from calcmate.agent.runner import EvalConfig, evaluate
    from calcmate.tasks import read_tasks
    from calcmate.tools import Toolbox
    from pathlib import Path

    DEV_TASKS = Path(__file__).parent / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl"

    src, _ = materialized_dev
    dump = tmp_path / "dump"
    dump_database(src, dump)  # the official dump's format: one gzip CSV with a header row per table
    dst = pg_server.create_database("official_dump_e2e")
    try:
        load_dump(dst, dump)
        pid = read_tasks(DEV_TASKS)[0].patient_id

        async def probe():
            async with Toolbox.in_process(dst.ro_dsn, servers=("postgres_executor",)) as tb:
                return await tb.call("postgres_executor", "run_read_only_sql",
                                     {"query": f"SELECT gender FROM patient_information WHERE patient_id = '{pid}'"})

        text, err = asyncio.run(probe())
        assert not err and json.loads(text)[0]["result"][0]["gender"]
        cfg = EvalConfig.model_validate({"tasks": str(DEV_TASKS), "policy": "oracle", "limit": 2, "ehr": {"dsn": dst.ro_dsn}})
        scores = evaluate(cfg, tmp_path / "eval", show_progress=False)
        assert scores["overall"]["n_tasks"] == 2 and scores["run"]["failed_tasks"] == 0
        assert json.loads((tmp_path / "eval" / "config.json").read_text())["ehr"]["dsn"] == dst.ro_dsn
    finally:
        pg_server.drop_database(dst.name)
    # no PostgreSQL of one's own: ehr.dump loads the dump into the run's embedded database
    cfg = EvalConfig.model_validate({"tasks": str(DEV_TASKS), "policy": "oracle", "limit": 2, "ehr": {"dump": str(dump)}})
    scores = evaluate(cfg, tmp_path / "eval_dump", show_progress=False)
    assert scores["overall"]["n_tasks"] == 2 and scores["run"]["failed_tasks"] == 0
