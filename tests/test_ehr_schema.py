"""The packaged EHR schema is MedMCP-Calc's schema unchanged (only an attribution header added),
so an official database dump loads into it as published."""

from pathlib import Path

from calcmate.ehr import schema_sql

FIXTURE = Path(__file__).parent / "fixtures" / "medmcp_calc" / "schema.sql"


def _body(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("-- create sample schema"))
    return lines[start:]


def test_packaged_schema_is_the_benchmark_schema():
    packaged = schema_sql()
    assert "MIT" in packaged.split("-- create sample schema")[0]  # attribution header kept
    assert _body(packaged) == _body(FIXTURE.read_text(encoding="utf-8"))
