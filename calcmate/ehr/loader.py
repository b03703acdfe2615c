"""Load the official MedMCP-Calc database dump: one ``<table>.csv.gz`` per EHR table.

Each file is a gzip CSV with a header row, streamed with ``COPY <table> (<header columns>) FROM
STDIN (FORMAT csv, HEADER true)``; empty unquoted fields are NULL (PostgreSQL's CSV default).
Missing files are reported, not fatal, so a partial dump still loads. ``dump_database`` writes
the same format (used by the tests' round trip, and to share a materialized EHR).
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

from psycopg import sql
from rich.progress import Progress

from calcmate.ehr.server import EHR_TABLES, EhrDatabase


def load_dump(db: EhrDatabase, directory: str | Path, *, truncate: bool = True, chunk: int = 1 << 20) -> dict[str, int]:
    """Load every ``<table>.csv.gz`` found in ``directory`` -> rows loaded per table."""
    d = Path(directory)
    if not d.is_dir():
        raise FileNotFoundError(f"dump directory {str(d)!r} does not exist")
    found = {t: d / f"{t}.csv.gz" for t in EHR_TABLES if (d / f"{t}.csv.gz").is_file()}
    if not found:
        raise FileNotFoundError(f"no <table>.csv.gz files in {str(d)!r}; expected names like {EHR_TABLES[0]}.csv.gz")
    counts: dict[str, int] = {}
    with db.connect(autocommit=False) as conn, Progress(transient=True) as bar:
        for table, path in found.items():
            with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
                header = next(csv.reader([f.readline()]))
            task = bar.add_task(f"{table}", total=path.stat().st_size)
            with conn.transaction():
                if truncate:
                    conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(table)))
                stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT csv, HEADER true)").format(
                    sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, header)))
                with conn.cursor() as cur, cur.copy(stmt) as cp, open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as gz:
                    while data := gz.read(chunk):
                        cp.write(data)
                        bar.update(task, completed=raw.tell())
                counts[table] = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
    return counts


def dump_database(db: EhrDatabase, directory: str | Path) -> dict[str, Path]:
    """Write every EHR table as ``<table>.csv.gz`` (header row, CSV) into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    with db.connect() as conn:
        for table in EHR_TABLES:
            path = d / f"{table}.csv.gz"
            tmp = path.with_suffix(".tmp")
            stmt = sql.SQL("COPY {} TO STDOUT (FORMAT csv, HEADER true)").format(sql.Identifier(table))
            with conn.cursor() as cur, cur.copy(stmt) as cp, gzip.open(tmp, "wb") as f:
                for data in cp:
                    f.write(bytes(data))
            tmp.replace(path)
            out[table] = path
    return out


__all__ = ["load_dump", "dump_database"]
