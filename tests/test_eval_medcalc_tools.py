"""``eval/medcalc_bench.py --solver model --set model.mode=tools``: a tool-using model served by a
real local OpenAI-compatible server runs native-protocol episodes against the real MCP reference
and python servers; the answers it reads off run_python are scored by the shared ``score()``, every
row's exchange is recorded in the transcripts, and a rerun resumes from them."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

from calcmate.medcalc_bench import Answer, read_csv, score

from test_agent_backends import ChatServer  # the real local OpenAI-compatible server

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "tests" / "fixtures" / "medcalc_bench" / "dev_relabelled.csv"
WRONG_FORMULA_ROW = "71"  # this row's "model" averages SBP and DBP: its answer must score wrong
PROSE_ROW = "88"  # this row's "model" ends in prose, not the block: the last number is read


def _load_eval():
    spec = importlib.util.spec_from_file_location("eval_medcalc_bench_tools", ROOT / "eval" / "medcalc_bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _tool_call(name: str, args: dict) -> dict:
    return {"content": "", "tool_calls": [{"id": f"c-{name}", "type": "function",
                                           "function": {"name": name, "arguments": json.dumps(args)}}]}


def make_model(rows):
    """A scripted tool-using model: search -> fetch the first hit -> run_python with the formula
    line of the fetched reference as a comment -> final answer with run_python's printed value."""
    by_note = {r.patient_note: r for r in rows}

    def reply(n_assistant: int, body: dict) -> dict:
        question = body["messages"][1]["content"]
        row = next(r for note, r in by_note.items() if note in question)
        last = body["messages"][-1]
        if n_assistant == 0:
            assert {t["function"]["name"] for t in body["tools"]} == {"search", "fetch", "run_python"}
            return _tool_call("search", {"query": "mean arterial pressure" if row.calculator_id == 5 else "body mass index"})
        if n_assistant == 1:
            assert last["role"] == "tool"
            return _tool_call("fetch", {"url": json.loads(last["content"])[0]["link"]})  # the official search hits
        if n_assistant == 2:
            formula = last["content"].split("## Formula\n", 1)[1].split("\n", 1)[0]
            e = {k.lower(): v for k, v in row.entities.items()}
            if row.calculator_id == 5:
                sbp, dbp = e["systolic blood pressure"][0], e["diastolic blood pressure"][0]
                expr = f"({sbp} + {dbp}) / 2" if row.row_id == WRONG_FORMULA_ROW else f"(2 * {dbp} + {sbp}) / 3"
            else:
                h = e["height"][0] / (100 if e["height"][1] == "cm" else 1)
                expr = f"{e['weight'][0]} / {h} ** 2"
            return _tool_call("run_python", {"code": f"# {formula}\nprint(round({expr}, 2))"})
        out = last["content"].strip().splitlines()[-1]  # the official run_python observation: "Output:\n<value>"
        if row.row_id == PROSE_ROW:
            return {"content": f"From the reference formula, the BMI is {out} kg/m2."}
        return {"content": "Computed with the reference formula.\n<final_answer>" + json.dumps(
            [{"calculator": row.calculator_name, "value": float(out), "unit": None}]) + "</final_answer>"}

    return reply


def test_tools_mode_runs_real_reference_and_python_tools(tmp_path):
    rows = [r for r in read_csv(CSV) if r.calculator_id in (5, 6)]
    assert {WRONG_FORMULA_ROW, PROSE_ROW} <= {r.row_id for r in rows}
    server = ChatServer(make_model(rows))
    out = tmp_path / "tools.json"
    argv = ["--solver", "model", "--csv", str(CSV), "--out", str(out), "--model", "served",
            "--set", "calculator_ids=[5,6]", "include_rows=true", "model.mode=tools", "model.backend.kind=openai",
            f"model.backend.base_url={server.url}", "model.concurrency=4"]
    mod = _load_eval()
    try:
        assert mod.main(argv) == 0
        n_requests = len(server.requests)
        assert mod.main(argv) == 0  # a rerun resumes from the transcripts: the model is not asked again
        assert len(server.requests) == n_requests == 4 * len(rows)
    finally:
        server.close()

    report = json.loads(out.read_text())
    transcripts = {t["task_id"]: t for t in map(json.loads, out.with_suffix(".transcripts.jsonl").read_text().splitlines())}
    assert set(transcripts) == {r.row_id for r in rows}
    by_row = {r["row"]: r for r in report["rows"]}
    for row in rows:
        tr = transcripts[row.row_id]
        calls = tr["tool_calls"]
        # the real MCP tools ran: their results are in the transcript, and each step used the last one's
        assert [c["tool"] for c in calls] == ["search", "fetch", "run_python"] and not any(c["is_error"] for c in calls)
        assert calls[0]["server"] == "google_search" and calls[2]["server"] == "python_executor"
        assert calls[1]["arguments"]["url"] in calls[0]["result"]
        title = "# Mean Arterial Pressure (MAP)" if row.calculator_id == 5 else "# Body Mass Index (BMI)"
        assert calls[1]["result"].startswith(f"Contents of {calls[1]['arguments']['url']}:\n\n{title}")
        assert "## Formula" in calls[1]["result"]
        formula = calls[1]["result"].split("## Formula\n", 1)[1].split("\n", 1)[0]
        assert calls[2]["arguments"]["code"].startswith(f"# {formula}\n")
        printed = calls[2]["result"].strip().removeprefix("Output:\n")  # the official run_python observation
        expected = eval(calls[2]["arguments"]["code"].split("print(", 1)[1][:-1])  # the code's own expression
        assert float(printed) == expected
        assert [m["role"] for m in tr["messages"]].count("tool") == 3
        assert tr["finished"] and tr["metadata"]["mode"] == "tools" and tr["metadata"]["answer"] == float(printed)
        # the score is the shared MedCalc-Bench score() of the value run_python printed
        assert by_row[row.row_id]["answer"] == float(printed)
        assert by_row[row.row_id]["correct"] == score(row, Answer(value=float(printed)))
    assert transcripts[PROSE_ROW]["final_answer"] is None and "kg/m2" in transcripts[PROSE_ROW]["final_answer_text"]
    assert not by_row[WRONG_FORMULA_ROW]["correct"]
    assert report["overall"] == {"n": len(rows), "correct": len(rows) - 1, "accuracy": (len(rows) - 1) / len(rows)}
    assert report["solver"] == "model:tools" and report["errors"] == []


def test_answer_value_and_block_entry_choice():
    from calcmate.agent.medcalc_solver import answer_value, parse_answer, pick_item
    from calcmate.agent.trajectory import FinalAnswerItem

    assert answer_value("24.3 kg/m²") == "24.3 kg/m²" and answer_value("(4 weeks, 2 days)") == "(4 weeks, 2 days)"
    assert answer_value("MAP = (2 x 60 + 90) / 3 = 70 mm Hg") == 70.0
    assert answer_value("The BMI is 24.3 kg/m2, SpO2 normal") == 24.3  # not the 2 of m2 or SpO2
    assert answer_value("cannot tell") is None and answer_value(12) == 12
    assert parse_answer('{"step_by_step_thinking": "...", "answer": "The score is 4 points"}') == 4.0
    items = [FinalAnswerItem(calculator="Cerebral Perfusion Pressure", value=60),
             FinalAnswerItem(calculator="MAP", value=93.3)]
    assert pick_item(items, "Mean Arterial Pressure (MAP)").value == 93.3  # the registry alias, not the first
    assert pick_item(items, "HEART Score").value == 60  # no name matches: the first entry
