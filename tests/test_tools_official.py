"""Our stdio servers, driven exactly as the official MedMCP-Calc ``MCPManager`` drives its own.

The official client (SPIRAL-MED/MedMCP-Calc, ``codes/medmcpcalc_mcp/client.py``, MIT) spawns each
server with ``stdio_client``, opens a ``ClientSession``, calls ``initialize``, ``list_tools`` and
``call_tool(name, arguments)``, joins the text contents, and prefixes "Tool Execution Error: " when
a result is flagged as an error. This test does the same, with the plain ``mcp`` SDK, against
``python -m calcmate.tools.{postgres,reference,python}``, and compares every tool and observation
with fixtures written from the official servers' code (tests/fixtures/official_mcp).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

FIXTURES = Path(__file__).parent / "fixtures" / "official_mcp"
ROOT = Path(__file__).resolve().parents[1]
OFFICIAL_TOOLS = json.loads((FIXTURES / "tools.json").read_text())
CASES = json.loads((FIXTURES / "observations.json").read_text())["cases"]

MODULES = {"postgres_executor": ["-m", "calcmate.tools.postgres"],
           "google_search": ["-m", "calcmate.tools.reference"],
           "python_executor": ["-m", "calcmate.tools.python", "--workers", "1", "--wall-s", "1"]}


async def _official_style(dsn: str) -> dict:
    """list_tools, then every fixture call, per server, the way MCPManager/MCPClient do."""
    out: dict = {"tools": {}, "calls": []}
    for server, args in MODULES.items():
        env = {**os.environ, "CALCMATE_EHR_DSN": dsn, "PYTHONPATH": str(ROOT)}
        env.pop("CALCMATE_TOOLS_FORMAT", None)  # the default must be the official format
        params = StdioServerParameters(command=sys.executable, args=args, env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=60) as session:  # mcp 1.x (official): timedelta
                await session.initialize()
                tools = (await session.list_tools()).tools
                out["tools"][server] = {t.name: {"description": t.description,
                                                 "arguments": list((t.input_schema or {}).get("properties", {})),
                                                 "required": list((t.input_schema or {}).get("required", []))}
                                        for t in tools}
                for case in (c for c in CASES if c["server"] == server):
                    res = await session.call_tool(case["tool"], case["arguments"])
                    text = "".join(c.text for c in res.content if c.type == "text")
                    out["calls"].append((case, f"Tool Execution Error: {text}" if res.is_error else text))
                if server == "google_search":  # a search hit's link must be fetchable
                    res = await session.call_tool("search", {"query": "creatinine clearance Cockcroft-Gault"})
                    hits = json.loads(res.content[0].text)
                    page = await session.call_tool("fetch", {"url": hits[0]["link"]})
                    out["search"] = (hits, page.content[0].text)
    return out


@pytest.fixture(scope="module")
def observed(ehr_db):
    return asyncio.run(_official_style(ehr_db.ro_dsn))


def test_tool_list_is_exactly_the_official_one(observed):
    for server, tools in OFFICIAL_TOOLS.items():
        assert set(observed["tools"][server]) == set(tools), server  # no run_sql, nothing extra
        for name, spec in tools.items():
            got = observed["tools"][server][name]
            assert got["description"] == spec["description"], name
            assert got["arguments"] == spec["arguments"] == got["required"], name


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c['tool']}-{n}" for n, c in enumerate(CASES)])
def test_observation_matches_the_official_server(observed, i):
    case, text = observed["calls"][i]
    assert case is CASES[i]
    if "expect" in case:
        assert text == case["expect"]
    else:
        assert text.startswith(case["startswith"]), text[:300]


def test_describe_tables_shape(observed):
    case, text = next((c, t) for c, t in observed["calls"] if c["tool"] == "describe_tables" and "startswith" in c)
    data = json.loads(text)
    assert list(data) == ["format_definition", "tables"]
    cols = data["tables"]["vital_signs"]
    assert all(len(c) == 3 and c[2] in ("YES", "NO") for c in cols)


def test_search_gives_serper_shaped_hits_that_fetch_accepts(observed):
    hits, page = observed["search"]
    assert [list(h) for h in hits] == [["title", "link", "snippet", "position", "date"]] * len(hits)
    assert [h["position"] for h in hits] == list(range(1, len(hits) + 1)) and len(hits) <= 10
    assert "cockcroft" in hits[0]["title"].lower()
    assert page.startswith(f"Contents of {hits[0]['link']}:\n\n") and "\n\n" not in page.split("\n\n", 1)[1]


def test_search_quality_holds_in_the_official_format():
    """The right reference is the first hit for every registry name and alias, and in the top 3 for a
    clinician's paraphrase (one per calculator, tests/fixtures/search/paraphrases.json) at least 95% of the time."""
    from calcmate.calculators.registry import registry
    from calcmate.tools.reference import ReferenceIndex

    idx = ReferenceIndex()
    misses = [(q, c.id) for c in registry() for q in (c.name, *c.aliases) if idx.search(q, 10)[0].url != c.url]
    assert not misses, misses[:10]
    para = json.loads((Path(__file__).parent / "fixtures" / "search" / "paraphrases.json").read_text())["paraphrases"]
    reg = registry()
    found = [reg.get(cid).url in [h.url for h in idx.search(q, 3)] for cid, q in para.items() if reg.find(cid)]
    assert len(found) >= 100 and sum(found) / len(found) >= 0.95, sum(found) / len(found)
