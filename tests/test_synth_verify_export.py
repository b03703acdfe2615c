"""Verification rejects corrupted trajectories; exported rows load with datasets and render through a
Qwen3 chat template with tools. Trajectories here are built by hand through the native protocol's
own message writers, with the official tool names and observation shapes and programs generated
from the registry and run in the real sandbox (the mutation suite, test_synth_verify_mutations.py,
and test_synth_pipeline.py run the real tools end to end)."""

from __future__ import annotations

import json

import pytest

from calcmate.agent.final_answer import write_final_answer
from calcmate.agent.oracle import python_for
from calcmate.agent.protocols import Action, NativeProtocol, ToolCall
from calcmate.agent.tools import ToolSpec
from calcmate.agent.trajectory import FinalAnswerItem, ToolCallRecord, Trajectory
from calcmate.calculators.registry import registry
from calcmate.synth.build import TaskCreationError, offline_task
from calcmate.synth.composer import branch_from_dict
from calcmate.synth.export import chat_messages, export_row, react_json_messages, write_dataset
from calcmate.synth.taxonomy import load_taxonomy
from calcmate.synth.verify import REASONS, computes, default_runner, verify
from calcmate.tools import official

TOOLS = [
    ToolSpec("postgres_executor", "run_read_only_sql", "Execute a read-only SQL query.",
             {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    ToolSpec("google_search", "fetch", "Fetch a URL.", {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
    ToolSpec("python_executor", "run_python", "Run Python code.", {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}),
]
SERVER = {s.name: s.server for s in TOOLS}


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
        if all(python_for(a)[0] for a in t.calculator_answers):
            out.append(t)
        if len(out) == 8:
            break
    return out


def _fed(inp) -> bool:
    return str(getattr(inp, "source", "") or "").startswith("calculator:")


def build(task, *, drop_sql_of=None, python_value=None, answer_value=None, extra_answer=None):
    """A trajectory that does what the task needs: the plan in the first tool turn, each
    calculator's reference fetched, SQL for each EHR input (official JSON rows), and its program
    generated from the registry, run in the sandbox ("Output:" as the official executor shows it)."""
    reg = registry()
    p = NativeProtocol()
    traj = Trajectory(task_id=task.task_id, policy="hand", messages=p.initial_messages(task.fuzzy_question))
    n = 0

    def call(tool, args, result, thought):
        nonlocal n
        n += 1
        if n == 1:
            thought = f"{task.plan['header']}\n\n{thought}"
        tc = ToolCall(tool, args, id=f"call_{n}")
        traj.messages.append(p.assistant_message(Action(thought=thought, tool_calls=[tc])))
        traj.messages.append(p.tool_message(tc, result, False))
        traj.tool_calls.append(ToolCallRecord(id=tc.id, server=SERVER[tool], tool=tool, arguments=args, result=result, round=n))

    items = []
    for a in task.calculator_answers:
        calc = reg.get(a.calculator_id)
        call("fetch", {"url": calc.url}, official.fetched(calc.url, calc.reference_markdown()), f"Read the reference for {a.name}.")
        for inp in a.inputs:
            if _fed(inp) or (drop_sql_of and drop_sql_of == (a.order, inp.field)):
                continue
            rows = [{"item": inp.field, "value": inp.value, "recorded_at": "2024-07-25 10:47:00"}]
            call("run_read_only_sql", {"query": f"SELECT item, value, recorded_at FROM ehr WHERE item = '{inp.field}'"},
                 json.dumps([{"sql_id": 0, "result": rows}], ensure_ascii=False, default=str), f"Retrieve {inp.field}.")
        code, _ = python_for(a)
        if python_value and python_value[0] == a.order:
            code = f"import json\nprint(json.dumps({json.dumps(python_value[1])}))\n"
        out = default_runner().run(code)
        assert out is not None, (a.name, code)
        call("run_python", {"code": code}, f"Output:\n{out.strip()}", f"Compute {a.name}.")
        value = json.loads(out.strip().splitlines()[-1])
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
        assert v.ok, (t.task_id, v.details())


def _numeric_answer(task):
    deciders = {bd["decider"] for bd in task.plan.get("branches", [])}
    return next(a for a in task.calculator_answers if isinstance(a.final_answer, (int, float))
                and a.final_answer != 0 and a.calculator_id not in deciders)


def test_wrong_number_is_rejected(tasks):
    t = next(t for t in tasks if any(isinstance(a.final_answer, (int, float)) and a.final_answer != 0
                                     and a.calculator_id not in {b["decider"] for b in t.plan.get("branches", [])}
                                     for a in t.calculator_answers))
    a = _numeric_answer(t)
    wrong = a.final_answer * 1.3 + 1
    v = verify(t, build(t, python_value=(a.order, wrong)))  # a program that prints a wrong constant
    assert not v.ok and {"wrong_value", "not_computed"} <= set(v.reasons)
    v2 = verify(t, build(t, answer_value=(a.order, wrong)))  # right computation, wrong report
    assert v2.reasons == ["wrong_value"], v2.details()


def test_missing_input_retrieval_is_rejected(tasks):
    t = tasks[1]
    a, inp = next((a, i) for a in t.calculator_answers for i in a.inputs
                  if not _fed(i) and any(ch.isdigit() for ch in str(i.value))
                  and str(i.value) not in {str(j.value) for b in t.calculator_answers for j in b.inputs if j is not i})
    v = verify(t, build(t, drop_sql_of=(a.order, inp.field)))
    # the value was never retrieved, so the program that uses it uses a value no tool result shows
    assert "input_not_retrieved" in v.reasons and set(v.reasons) <= {"input_not_retrieved", "ungrounded_input", "not_computed"}, v.details()
    assert inp.field in v.details()


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


def test_feedback_names_only_the_process(tasks):
    """The retry text: one process sentence per reason, never the calculator or a value."""
    from calcmate.synth.teacher import feedback_leaks

    t = tasks[0]
    a = _numeric_answer(t) if any(isinstance(x.final_answer, (int, float)) for x in t.calculator_answers) else t.calculator_answers[0]
    v = verify(t, build(t, python_value=(a.order, 12345.6)))
    assert not v.ok and a.name in v.details()
    fb = v.feedback()
    assert fb.count("\n") + 1 == len(v.reasons) and set(v.reasons) <= set(REASONS)
    assert a.name not in fb and "12345" not in fb and not feedback_leaks(fb, t)


# -- computes(): does a program derive its printed value from its inputs? ---------------------------
def test_computes_varies_inputs_in_the_sandbox():
    yes = lambda x: True  # noqa: E731 - every number counts as shown by a tool result
    assert computes("weight = 70.0\nheight = 1.75\nprint(round(weight / height ** 2, 1))", 22.9, yes) == (True, "")
    assert not computes("print(42)", 42, yes)[0]  # a constant
    assert not computes("import json\nvalue = 42\nprint(json.dumps(value))", 42, yes)[0]  # the answer written down
    assert not computes("age = 70\nscore = 3\nprint(score)", 3, yes)[0]  # ignores its input
    # only numbers some tool result showed count as inputs: a constant dressed as arithmetic is not
    assert not computes("a = 40\nb = 2\nprint(a + b)", 42, lambda x: False)[0]
    # a conjunctive rule moves only when several inputs move at once: flags are varied jointly
    rule = ("v = {'acute': True, 'inattention': False, 'altered': None, 'disorganized': False}\n"
            "pos = v['acute'] and v['inattention'] and (v['altered'] or v['disorganized'])\n"
            "print('Positive' if pos else 'Negative')")
    assert computes(rule, "Negative", yes)[0]
    # a scale whose score is its input: structured input data, exactly one of the calculator's inputs
    assert computes("v = {'level': 3}\nprint(v['level'])", 3, yes, own_inputs=[3.0])[0]
    assert not computes("level = 3\nprint(level)", 3, yes, own_inputs=[3.0])[0]
    assert not computes("this is not python", 1, yes)[0]


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
        # the plan opens the first tool-calling turn; no assistant turn but the last lacks a tool call
        assert msgs[2]["role"] == "assistant" and msgs[2]["content"].startswith("Plan:") and msgs[2]["tool_calls"]
        assert all(m.get("tool_calls") for m in msgs[2:-1] if m["role"] == "assistant")
        calls = [c for m in msgs if m["role"] == "assistant" and m.get("tool_calls") for c in m["tool_calls"]]
        assert calls and all(isinstance(c["function"]["arguments"], str) for c in calls)
        json.loads(calls[0]["function"]["arguments"])
        assert any(m["role"] == "tool" for m in msgs)
        text = tok.apply_chat_template(msgs, tools=json.loads(row["tools"]), tokenize=False)
        assert "<tools>" in text and "run_read_only_sql" in text and "<tool_call>" in text and "<tool_response>" in text
        assert "<final_answer>" in text and text.count("<|im_start|>assistant") >= len(calls)
        enc = tok.apply_chat_template(msgs, tools=json.loads(row["tools"]), tokenize=True)
        ids = enc["input_ids"] if isinstance(enc, dict) or hasattr(enc, "keys") else enc
        assert len(ids) > 100
    assert all(r["num_tokens"] > 100 and r["token_count_method"] == "estimate" for r in rows)


def test_react_json_rendering(tasks):
    t = tasks[0]
    msgs = react_json_messages(build(t), t.fuzzy_question)
    assert msgs[0] == {"role": "user", "content": t.fuzzy_question}
    first = json.loads(msgs[1]["content"])
    assert first["thought"].startswith("Plan:") and "action" in first  # the plan opens the first action
    for m in msgs[1:]:
        if m["role"] == "assistant":
            obj = json.loads(m["content"])
            assert "thought" in obj and ("action" in obj or "answer" in obj)
        else:
            assert m["role"] == "user" and m["content"].startswith("Result: ")
    assert json.loads(msgs[-1]["content"])["answer"].count("<final_answer>") == 1
    assert len(chat_messages(build(t))) == len(build(t).messages)
