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
