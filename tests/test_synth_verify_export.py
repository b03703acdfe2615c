"""Verification rejects corrupted trajectories; exported rows load with datasets and render through a
Qwen3 chat template with tools. Trajectories here are built by hand through the native protocol's
own message writers (the end-to-end test in test_synth_pipeline.py runs the real tools)."""

from __future__ import annotations

import json

import pytest

from calcmate.agent.final_answer import write_final_answer
from calcmate.agent.protocols import Action, NativeProtocol, ToolCall
from calcmate.agent.tools import ToolSpec
from calcmate.agent.trajectory import FinalAnswerItem, ToolCallRecord, Trajectory
from calcmate.calculators.registry import registry
from calcmate.synth.build import TaskCreationError, offline_task
from calcmate.synth.composer import branch_from_dict
from calcmate.synth.export import chat_messages, export_row, react_json_messages, write_dataset
from calcmate.synth.taxonomy import load_taxonomy
from calcmate.synth.verify import verify

TOOLS = [
    ToolSpec("postgres", "run_sql", "Run one read-only SQL query.", {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    ToolSpec("python", "run_python", "Run Python code.", {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}),
]


@pytest.fixture(scope="module")
def tasks():
    reg = registry()
    tax = load_taxonomy(reg=reg)
    out = []
    for i in range(40):
        try:
            t = offline_task(tax, reg, "verify", i)
        except TaskCreationError:
            continue
        out.append(t)
        if len(out) == 8:
            break
    return out


def build(task, *, drop_sql_of=None, python_value=None, answer_value=None, extra_answer=None):
    """A trajectory that does what the task needs: SQL for each EHR input, Python for each value."""
    p = NativeProtocol()
    traj = Trajectory(task_id=task.task_id, policy="hand", messages=p.initial_messages(task.fuzzy_question))
    n = 0

    def call(tool, args, result, thought):
        nonlocal n
        n += 1
        tc = ToolCall(tool, args, id=f"call_{n}")
        traj.messages.append(p.assistant_message(Action(thought=thought, tool_calls=[tc])))
        traj.messages.append(p.tool_message(tc, result, False))
        traj.tool_calls.append(ToolCallRecord(id=tc.id, server="postgres" if tool == "run_sql" else "python",
                                              tool=tool, arguments=args, result=result, round=n))

    items = []
    for a in task.calculator_answers:
        for inp in a.inputs:
            if str(getattr(inp, "source", "")).startswith("calculator:") or (drop_sql_of and drop_sql_of == (a.order, inp.field)):
                continue
            call("run_sql", {"query": f"SELECT value FROM ehr WHERE item = '{inp.field}'"},
                 f"item | value\n{inp.field} | {inp.value}", f"Retrieve {inp.field}.")
        value = a.final_answer
        if python_value and python_value[0] == a.order:
            value = python_value[1]
        call("run_python", {"code": f"print({json.dumps(value)})"}, json.dumps(value), f"Compute {a.name}.")
        ans = answer_value[1] if answer_value and answer_value[0] == a.order else value
        items.append(FinalAnswerItem(calculator=a.name, value=ans, unit=getattr(a, "unit", None)))
    if extra_answer:
        items.append(FinalAnswerItem(calculator=extra_answer, value=1))
    text = write_final_answer(items)
    traj.messages.append(p.assistant_message(Action(answer=text)))
    traj.final_answer_text, traj.final_answer, traj.finished, traj.stop_reason = text, items, True, "answer"
    return traj


def test_a_faithful_trajectory_passes(tasks):
    assert len(tasks) >= 5
    for t in tasks:
        v = verify(t, build(t))
        assert v.ok, (t.task_id, v.feedback())


def _numeric_answer(task):
    return next(a for a in task.calculator_answers if isinstance(a.final_answer, (int, float)) and a.final_answer != 0)


def test_wrong_number_is_rejected(tasks):
    t = tasks[0]
    a = _numeric_answer(t)
    wrong = a.final_answer * 1.3 + 1
    v = verify(t, build(t, python_value=(a.order, wrong)))
    assert not v.ok and {"wrong_value", "not_computed"} <= set(v.reasons)
    v2 = verify(t, build(t, answer_value=(a.order, wrong)))  # right computation, wrong report
    assert v2.reasons == ["wrong_value"]


def test_missing_input_retrieval_is_rejected(tasks):
    t = tasks[1]
    a, inp = next((a, i) for a in t.calculator_answers for i in a.inputs
                  if not str(getattr(i, "source", "")).startswith("calculator:") and any(ch.isdigit() for ch in str(i.value))
                  and str(i.value) not in {str(j.value) for b in t.calculator_answers for j in b.inputs if j is not i})
    v = verify(t, build(t, drop_sql_of=(a.order, inp.field)))
    assert v.reasons == ["input_not_retrieved"], v.feedback()
    assert inp.field in v.feedback()


def test_wrong_branch_is_rejected(tasks):
    reg = registry()
    t = next(t for t in tasks if branch_from_dict(t.plan["branches"][0]).else_ and branch_from_dict(t.plan["branches"][0]).then)
    b = branch_from_dict(t.plan["branches"][0])
    skipped = b.else_ if t.plan["branches"][0]["taken"] == "then" else b.then
    v = verify(t, build(t, extra_answer=reg.get(skipped[0]).name))
    assert "wrong_branch" in v.reasons
    # a plan whose recorded arm contradicts the registry value is rejected too
    bad = t.model_copy(deep=True)
    bad.plan["branches"][0]["taken"] = "else" if t.plan["branches"][0]["taken"] == "then" else "then"
    assert "wrong_branch" in verify(bad, build(t)).reasons


def test_incomplete_and_unfinished_are_rejected(tasks):
    t = tasks[2]
    traj = build(t)
    traj.final_answer = traj.final_answer[:-1]
    assert verify(t, traj).reasons == ["incomplete"]
    traj.finished, traj.final_answer = False, None
    assert "not_finished" in verify(t, traj).reasons


def test_exported_rows_load_and_render_with_qwen3_template(tasks, tmp_path):
    from datasets import load_dataset

    from calcmate.training.tiny import build_tokenizer

    tools = [s.openai_schema() for s in TOOLS]
    rows = [export_row(t, build(t), tools, teacher="hand") for t in tasks[:4]]
    paths = write_dataset(rows, tmp_path / "dataset")
    tok = build_tokenizer()
    for fmt, path in (("json", paths["jsonl"]), ("parquet", paths["parquet"])):
        ds = load_dataset(fmt, data_files=str(path), split="train")
        assert len(ds) == 4 and set(ds.column_names) >= {"messages", "tools", "domain", "scenario", "calculators", "num_tokens", "teacher"}
        row = ds[0]
        msgs = row["messages"]
        assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user"
        assert msgs[2]["role"] == "assistant" and msgs[2]["content"].startswith("Plan:")  # planning header first
        calls = [c for m in msgs if m["role"] == "assistant" and m.get("tool_calls") for c in m["tool_calls"]]
        assert calls and all(isinstance(c["function"]["arguments"], str) for c in calls)
        json.loads(calls[0]["function"]["arguments"])
        assert any(m["role"] == "tool" for m in msgs)
        text = tok.apply_chat_template(msgs, tools=json.loads(row["tools"]), tokenize=False)
        assert "<tools>" in text and "run_sql" in text and "<tool_call>" in text and "<tool_response>" in text
        assert "<final_answer>" in text and text.count("<|im_start|>assistant") >= len(calls)
        enc = tok.apply_chat_template(msgs, tools=json.loads(row["tools"]), tokenize=True)
        ids = enc["input_ids"] if isinstance(enc, dict) or hasattr(enc, "keys") else enc
        assert len(ids) > 100
    assert all(r["num_tokens"] > 100 and r["token_count_method"] == "estimate" for r in rows)


def test_react_json_rendering(tasks):
    t = tasks[0]
    msgs = react_json_messages(build(t), t.plan["header"], t.fuzzy_question)
    assert msgs[0] == {"role": "user", "content": t.fuzzy_question}
    for m in msgs[1:]:
        if m["role"] == "assistant":
            obj = json.loads(m["content"])
            assert "thought" in obj and ("action" in obj or "answer" in obj or obj.get("plan"))
        else:
            assert m["role"] == "user" and m["content"].startswith("Result: ")
    assert json.loads(msgs[-1]["content"])["answer"].count("<final_answer>") == 1
    assert len(chat_messages(build(t), None)) + 1 == len(chat_messages(build(t), "Plan: x"))
